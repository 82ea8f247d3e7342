package health

import (
	"encoding/json"
	"net/http"
	"time"
)

// Server holds the handlers of --healthz-bind-address.
type Server struct {
	Proxy *Proxy
	// NodeEligible reports whether the Node exists, is not being deleted and is not
	// tainted ToBeDeletedByClusterAutoscaler; /healthz fails otherwise (kube-proxy 1.28+,
	// KEP-3836), so load balancers drain the node first.
	NodeEligible func() bool
	// Status builds the /status body.
	Status func() any
	// Count is told the code of each /healthz and /livez answer, for metrics.
	CountHealthz, CountLivez func(code int)
	// APIServer, when set, makes /readyz fail with the reason while the API server is
	// unreachable. /livez does not follow it: a restart cannot bring the server back,
	// and the programmed state keeps forwarding meanwhile.
	APIServer *APIServer
}

// Handler returns the mux.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { s.health(w, true) })
	mux.HandleFunc("/livez", func(w http.ResponseWriter, r *http.Request) { s.health(w, false) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		st := s.Proxy.State()
		body := readyBody{Ready: st.Ready, LastUpdated: st.LastUpdated, CurrentTime: st.Now}
		if s.APIServer != nil {
			body.Reason = s.APIServer.Reason()
		}
		if !st.Ready && body.Reason == "" {
			body.Reason = "waiting for the first successful sync"
		}
		code := http.StatusOK
		if body.Reason != "" {
			body.Ready, code = false, http.StatusServiceUnavailable
		}
		writeJSON(w, code, body)
	})
	mux.HandleFunc("/proxyMode", ProxyMode)
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		if s.Status == nil {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, http.StatusOK, s.Status())
	})
	return mux
}

// ProxyMode answers "ipvs", as kube-proxy does on both its servers.
func ProxyMode(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte("ipvs"))
}

// readyBody is the /readyz body; Reason says why it is not ready.
type readyBody struct {
	Ready       bool      `json:"ready"`
	Reason      string    `json:"reason,omitempty"`
	LastUpdated time.Time `json:"lastUpdated"`
	CurrentTime time.Time `json:"currentTime"`
}

// healthBody is kube-proxy's /healthz and /livez body.
type healthBody struct {
	LastUpdated  time.Time `json:"lastUpdated"`
	CurrentTime  time.Time `json:"currentTime"`
	NodeEligible *bool     `json:"nodeEligible,omitempty"`
	Healthy      bool      `json:"healthy"`
}

func (s *Server) health(w http.ResponseWriter, withNode bool) {
	st := s.Proxy.State()
	ok := st.Healthy
	body := healthBody{LastUpdated: st.LastUpdated, CurrentTime: st.Now, Healthy: st.Healthy}
	if st.Healthy {
		body.LastUpdated = st.Now // kube-proxy reports "now" while healthy
	}
	count := s.CountLivez
	if withNode {
		count = s.CountHealthz
		eligible := s.NodeEligible == nil || s.NodeEligible()
		body.NodeEligible = &eligible
		ok = ok && eligible
	}
	code := http.StatusOK
	if !ok {
		code = http.StatusServiceUnavailable
	}
	if count != nil {
		count(code)
	}
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

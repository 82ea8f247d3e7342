package health

import (
	"encoding/json"
	"net/http"
	"time"
)

// Server holds the handlers of --healthz-bind-address, which is open to the node's
// network (0.0.0.0:10256 by default): kube-proxy's health contract and no more. /healthz
// and /livez answer kube-proxy's bodies; /readyz adds a short reason, never the API
// server's address or error (those are in the log and in /status, on the metrics
// listener).
type Server struct {
	Proxy *Proxy
	// NodeEligible reports whether the Node exists, is not being deleted and is not
	// tainted ToBeDeletedByClusterAutoscaler; /healthz fails otherwise (kube-proxy 1.28+,
	// KEP-3836), so load balancers drain the node first.
	NodeEligible func() bool
	// Count is told the code of each /healthz and /livez answer, for metrics.
	CountHealthz, CountLivez func(code int)
	// APIServer, when set, makes /readyz fail with the reason while the API server is
	// unreachable. /livez does not follow it: a restart cannot bring the server back,
	// and the programmed state keeps forwarding meanwhile.
	APIServer *APIServer
	// SetupIncomplete makes /readyz fail: the node lacks a sysctl or module that this
	// container could not set (the log, the Node's Events and /status say which).
	SetupIncomplete bool
}

// Handler returns the mux.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { s.health(w, true) })
	mux.HandleFunc("/livez", func(w http.ResponseWriter, r *http.Request) { s.health(w, false) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		rd := s.Readiness()
		body := readyBody{Ready: rd.Ready, Reason: rd.Reason, LastUpdated: rd.LastUpdated, CurrentTime: rd.Now}
		code := http.StatusOK
		if !rd.Ready {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, body)
	})
	return mux
}

// Readiness is what /readyz answers.
type Readiness struct {
	Ready bool
	// Reason says why it is not ready: node setup incomplete, the API server
	// unreachable, or no successful sync yet (in that order of precedence).
	Reason           string
	LastUpdated, Now time.Time
}

// Readiness decides /readyz, for its handler and for /status alike, so that the two
// cannot disagree.
func (s *Server) Readiness() Readiness {
	st := s.Proxy.State()
	rd := Readiness{LastUpdated: st.LastUpdated, Now: st.Now}
	switch {
	case s.SetupIncomplete:
		rd.Reason = "node setup incomplete"
	case s.APIServer != nil && !s.APIServer.State().Reachable:
		rd.Reason = "the API server is unreachable"
	case !st.Ready:
		rd.Reason = "waiting for the first successful sync"
	}
	rd.Ready = rd.Reason == ""
	return rd
}

// StatusHandler serves /status, the body status builds: Service names, VIPs, connection
// counts, the API server's address and error. It belongs on the metrics listener
// (loopback by default), not on the health listener.
func StatusHandler(status func() any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, status()) }
}

// ProxyMode answers "ipvs", as kube-proxy does on its metrics server.
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

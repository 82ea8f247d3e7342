package health

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestProxyHealthTimeout(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	p := NewProxy(60*time.Second, c.now)
	if st := p.State(); !st.Healthy || st.Ready {
		t.Fatalf("fresh: %+v, want healthy and not ready", st)
	}
	p.Queued()
	c.t = c.t.Add(59 * time.Second)
	p.Queued() // a later change does not move the oldest
	if !p.Healthy() {
		t.Error("unhealthy before the timeout")
	}
	c.t = c.t.Add(time.Second)
	if p.Healthy() {
		t.Error("healthy with a change queued for 2 x syncPeriod")
	}
	p.Updated()
	if st := p.State(); !st.Healthy || !st.Ready || !st.LastUpdated.Equal(c.t) {
		t.Errorf("after a sync: %+v", st)
	}
}

func get(t *testing.T, h http.Handler, path string) (*http.Response, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	resp := rec.Result()
	var body map[string]any
	if resp.Header.Get("Content-Type") == "application/json" {
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return resp, body
}

func TestHealthEndpoints(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	p := NewProxy(time.Minute, c.now)
	eligible := true
	codes := map[string][]int{}
	s := &Server{Proxy: p, NodeEligible: func() bool { return eligible },
		CountHealthz: func(code int) { codes["healthz"] = append(codes["healthz"], code) },
		CountLivez:   func(code int) { codes["livez"] = append(codes["livez"], code) }}
	h := s.Handler()

	tests := []struct {
		name                  string
		setup                 func()
		healthz, livez, ready int
	}{
		{"before the first sync", func() {}, 200, 200, 503},
		{"synced", p.Updated, 200, 200, 200},
		{"node being deleted", func() { eligible = false }, 503, 200, 200},
		{"sync stuck", func() { eligible = true; p.Queued(); c.t = c.t.Add(2 * time.Minute) }, 503, 503, 200},
		{"recovered", p.Updated, 200, 200, 200},
	}
	for _, tt := range tests {
		tt.setup()
		for path, want := range map[string]int{"/healthz": tt.healthz, "/livez": tt.livez, "/readyz": tt.ready} {
			resp, body := get(t, h, path)
			if resp.StatusCode != want {
				t.Errorf("%s: %s = %d, want %d", tt.name, path, resp.StatusCode, want)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s: %s lacks nosniff", tt.name, path)
			}
			if path == "/readyz" {
				continue
			}
			if body["healthy"] != (tt.livez == 200) || body["currentTime"] == nil || body["lastUpdated"] == nil {
				t.Errorf("%s: %s body %v", tt.name, path, body)
			}
			if _, has := body["nodeEligible"]; has != (path == "/healthz") {
				t.Errorf("%s: %s body %v: nodeEligible only on /healthz", tt.name, path, body)
			}
		}
	}
	if len(codes["healthz"]) != len(tests) || codes["healthz"][2] != 503 || codes["livez"][3] != 503 {
		t.Errorf("counted codes %v", codes)
	}
	resp, _ := get(t, http.HandlerFunc(ProxyMode), "/proxyMode")
	if b, _ := io.ReadAll(resp.Body); string(b) != "ipvs" {
		t.Errorf("/proxyMode = %q", b)
	}
	if _, body := get(t, StatusHandler(func() any { return map[string]int{"virtualServers": 3} }), "/status"); body["virtualServers"] != 3.0 {
		t.Errorf("/status = %v", body)
	}
}

// TestHealthListenerContract: the health listener, open to the node's network, serves
// kube-proxy's health contract and nothing more: /healthz and /livez with kube-proxy's
// fields, /readyz with a short reason that names no server and no error; every other
// path is 404, /status and /proxyMode included.
func TestHealthListenerContract(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	p := NewProxy(time.Minute, c.now)
	api := NewAPIServer("https://10.0.0.1:6443", c.now)
	api.Probed(errors.New("dial tcp 10.0.0.1:6443: connect: connection refused"))
	h := (&Server{Proxy: p, APIServer: api}).Handler()
	allowed := map[string]map[string]bool{
		// kube-proxy's ProxyHealth (pkg/proxy/healthcheck/proxy_health.go).
		"/healthz": {"lastUpdated": true, "currentTime": true, "nodeEligible": true, "healthy": true, "status": true},
		"/livez":   {"lastUpdated": true, "currentTime": true, "nodeEligible": true, "healthy": true, "status": true},
		"/readyz":  {"ready": true, "reason": true, "lastUpdated": true, "currentTime": true},
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz", "/", "/status", "/proxyMode", "/metrics", "/debug/pprof/",
		"/configz", "/flagz", "/statusz", "/healthz/ping", "/readyz/status", "/status/", "/STATUS", "/%2e/status"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://192.168.0.10:10256"+path, nil))
		keys, ok := allowed[path]
		if !ok {
			if rec.Code != http.StatusNotFound {
				t.Errorf("%s answered %d %q, want 404", path, rec.Code, rec.Body.String())
			}
			continue
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v: %q", path, err, rec.Body.String())
		}
		for k := range body {
			if !keys[k] {
				t.Errorf("%s has field %q beyond the health contract: %s", path, k, rec.Body.String())
			}
		}
		if b := rec.Body.String(); strings.Contains(b, "10.0.0.1") || strings.Contains(b, "refused") {
			t.Errorf("%s names the API server or its error: %s", path, b)
		}
	}
}

// freePort finds a loopback port nobody listens on.
func freePort(t *testing.T) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

type hcAnswer struct {
	code   int
	weight string
	body   hcBody
}

func askHC(t *testing.T, port uint16, path string) (hcAnswer, error) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(int(port)) + path)
	if err != nil {
		return hcAnswer{}, err
	}
	defer resp.Body.Close()
	a := hcAnswer{code: resp.StatusCode, weight: resp.Header.Get("X-Load-Balancing-Endpoint-Weight")}
	if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v", resp.Header)
	}
	return a, json.NewDecoder(resp.Body).Decode(&a.body)
}

func TestHealthCheckNodePorts(t *testing.T) {
	healthy := true
	s := NewServices([]netip.Addr{netip.MustParseAddr("127.0.0.1")}, func() bool { return healthy })
	defer s.Close()
	key := proxier.ServiceKey{Namespace: "ns", Name: "lb"}
	port := freePort(t)

	s.SetHealthCheck(key, &proxier.HealthCheck{Port: port, LocalEndpoints: 2})
	s.Apply()
	a, err := askHC(t, port, "/any/path")
	if err != nil {
		t.Fatal(err)
	}
	if a.code != 200 || a.weight != "2" || a.body.LocalEndpoints != 2 || !a.body.ServiceProxyHealthy ||
		a.body.Service.Namespace != "ns" || a.body.Service.Name != "lb" {
		t.Errorf("2 local endpoints: %+v", a)
	}

	s.SetHealthCheck(key, &proxier.HealthCheck{Port: port, LocalEndpoints: 0})
	s.Apply()
	if a, _ := askHC(t, port, "/"); a.code != 503 || a.weight != "0" || a.body.LocalEndpoints != 0 {
		t.Errorf("no local endpoint: %+v", a)
	}

	s.SetHealthCheck(key, &proxier.HealthCheck{Port: port, LocalEndpoints: 1})
	s.Apply()
	healthy = false
	if a, _ := askHC(t, port, "/"); a.code != 503 || a.weight != "1" || a.body.ServiceProxyHealthy {
		t.Errorf("proxy unhealthy: %+v", a)
	}
	healthy = true

	// The port moves: the old listener closes, the new one opens.
	port2 := freePort(t)
	s.SetHealthCheck(key, &proxier.HealthCheck{Port: port2, LocalEndpoints: 1})
	s.Apply()
	if _, err := askHC(t, port, "/"); err == nil {
		t.Error("old port still answers after the move")
	}
	if a, err := askHC(t, port2, "/"); err != nil || a.code != 200 {
		t.Errorf("new port: %+v %v", a, err)
	}

	// A full sync without the Service closes it.
	s.ReplaceHealthChecks(map[proxier.ServiceKey]proxier.HealthCheck{})
	s.Apply()
	if _, err := askHC(t, port2, "/"); err == nil {
		t.Error("port still answers after the Service went away")
	}
	if len(s.Ports()) != 0 {
		t.Errorf("ports %v", s.Ports())
	}
}

func TestHealthCheckListenFailureRetries(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(busy.Addr().(*net.TCPAddr).Port)
	s := NewServices([]netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil)
	defer s.Close()
	var failures []error
	s.OnError = func(k proxier.ServiceKey, p uint16, err error) { failures = append(failures, err) }
	key := proxier.ServiceKey{Namespace: "ns", Name: "lb"}
	s.SetHealthCheck(key, &proxier.HealthCheck{Port: port, LocalEndpoints: 1})
	s.Apply()
	if len(failures) != 1 || len(s.Ports()) != 0 {
		t.Fatalf("busy port: failures %v, ports %v", failures, s.Ports())
	}
	busy.Close()
	s.Apply() // nothing changed, but the failed listener is retried
	if a, err := askHC(t, port, "/"); err != nil || a.code != 200 {
		t.Errorf("after the port freed: %+v %v", a, err)
	}
}

// TestHealthCheckNodePortsFollowAddresses: when the node's NodePort addresses change
// (an address added or removed, `primary` resolved), the listeners move with them; an
// empty list closes them, nil listens on every address.
func TestHealthCheckNodePortsFollowAddresses(t *testing.T) {
	s := NewServices([]netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil)
	defer s.Close()
	port := freePort(t)
	s.SetHealthCheck(proxier.ServiceKey{Namespace: "ns", Name: "lb"}, &proxier.HealthCheck{Port: port, LocalEndpoints: 1})
	s.Apply()
	at := func(ip string) error {
		c := &http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get("http://" + net.JoinHostPort(ip, strconv.Itoa(int(port))) + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if at("127.0.0.1") != nil || at("127.0.0.2") == nil {
		t.Fatal("want the listener on 127.0.0.1 only")
	}
	s.SetAddresses([]netip.Addr{netip.MustParseAddr("127.0.0.2")})
	s.Apply()
	if at("127.0.0.2") != nil || at("127.0.0.1") == nil {
		t.Error("after the move: want the listener on 127.0.0.2 only")
	}
	s.SetAddresses([]netip.Addr{})
	s.Apply()
	if at("127.0.0.2") == nil || at("127.0.0.1") == nil {
		t.Error("no address: want no listener")
	}
	s.SetAddresses(nil)
	s.Apply()
	if at("127.0.0.2") != nil || at("127.0.0.1") != nil {
		t.Error("nil: want a listener on every address")
	}
}

// TestReadyzSetupIncomplete: a node setup this container could not finish keeps /readyz
// at 503 with a short reason, while /livez stays 200 (a restart would not help).
func TestReadyzSetupIncomplete(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	p := NewProxy(time.Minute, c.now)
	p.Updated()
	h := (&Server{Proxy: p, SetupIncomplete: true}).Handler()
	if resp, body := get(t, h, "/readyz"); resp.StatusCode != 503 || body["reason"] != "node setup incomplete" {
		t.Errorf("/readyz = %d %v", resp.StatusCode, body)
	}
	if resp, _ := get(t, h, "/livez"); resp.StatusCode != 200 {
		t.Errorf("/livez = %d", resp.StatusCode)
	}
}

package health

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Services serves the healthCheckNodePort of each ETP=Local LoadBalancer Service with
// kube-proxy's contract (pkg/proxy/healthcheck/service_health.go): any path answers 200
// when the Service has local ready endpoints and the proxy is healthy, 503 otherwise,
// with X-Load-Balancing-Endpoint-Weight set to the local endpoint count. It implements
// sync.HealthCheckSink and is safe for concurrent use.
type Services struct {
	Healthy func() bool
	// OnError is told when a listener cannot open; it is retried on the next Apply.
	OnError func(k proxier.ServiceKey, port uint16, err error)

	mu sync.Mutex
	// ips to listen on: nil means every address (":port"), empty none (SetAddresses).
	ips     []netip.Addr
	want    map[proxier.ServiceKey]proxier.HealthCheck
	servers map[proxier.ServiceKey]*hcServer
	dirty   bool
}

type hcServer struct {
	port    uint16
	ips     []netip.Addr
	servers []*http.Server
	// count is the local endpoint count the handler reports.
	count atomic.Int64
}

// NewServices returns an empty set of health-check servers.
func NewServices(ips []netip.Addr, healthy func() bool) *Services {
	return &Services{ips: ips, Healthy: healthy, want: map[proxier.ServiceKey]proxier.HealthCheck{}, servers: map[proxier.ServiceKey]*hcServer{}}
}

// SetHealthCheck implements sync.HealthCheckSink.
func (s *Services) SetHealthCheck(k proxier.ServiceKey, hc *proxier.HealthCheck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.want[k]
	switch {
	case hc == nil && had:
		delete(s.want, k)
	case hc != nil && (!had || old != *hc):
		s.want[k] = *hc
	default:
		return
	}
	s.dirty = true
}

// SetAddresses implements sync.HealthCheckSink: the node addresses to listen on (nil:
// every address; empty: none). Listeners on other addresses reopen at the next Apply.
func (s *Services) SetAddresses(ips []netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if (ips == nil) != (s.ips == nil) || !slices.Equal(ips, s.ips) {
		s.ips, s.dirty = slices.Clone(ips), true
	}
}

// ReplaceHealthChecks implements sync.HealthCheckSink.
func (s *Services) ReplaceHealthChecks(all map[proxier.ServiceKey]proxier.HealthCheck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.want, s.dirty = all, true
}

// Apply implements sync.HealthCheckSink: listeners whose Service went away or whose port
// changed close; missing ones open; counts update in place. Listeners open and close
// outside the lock, so a handler in flight never holds up a sync.
func (s *Services) Apply() {
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		return
	}
	s.dirty = false
	var stale []*hcServer
	open := map[proxier.ServiceKey]proxier.HealthCheck{}
	ips := s.ips
	for k, srv := range s.servers {
		if hc, ok := s.want[k]; !ok || hc.Port != srv.port || (ips == nil) != (srv.ips == nil) || !slices.Equal(ips, srv.ips) {
			stale = append(stale, srv)
			delete(s.servers, k)
		}
	}
	for k, hc := range s.want {
		if srv, ok := s.servers[k]; ok {
			srv.count.Store(int64(hc.LocalEndpoints))
		} else {
			open[k] = hc
		}
	}
	s.mu.Unlock()

	for _, srv := range stale {
		srv.close()
	}
	for k, hc := range open {
		srv, err := s.listen(k, hc.Port, ips)
		if err != nil {
			s.mu.Lock()
			s.dirty = true // retried on the next Apply
			s.mu.Unlock()
			if s.OnError != nil {
				s.OnError(k, hc.Port, err)
			}
			continue
		}
		srv.count.Store(int64(hc.LocalEndpoints))
		s.mu.Lock()
		s.servers[k] = srv
		s.mu.Unlock()
	}
}

// Ports returns the open health-check ports by Service.
func (s *Services) Ports() map[proxier.ServiceKey]uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[proxier.ServiceKey]uint16, len(s.servers))
	for k, srv := range s.servers {
		out[k] = srv.port
	}
	return out
}

// Close stops every listener.
func (s *Services) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, srv := range s.servers {
		srv.close()
		delete(s.servers, k)
	}
}

func (s *Services) listen(k proxier.ServiceKey, port uint16, ips []netip.Addr) (*hcServer, error) {
	srv := &hcServer{port: port, ips: ips}
	addrs := []string{":" + strconv.Itoa(int(port))}
	if ips != nil {
		addrs = addrs[:0]
		for _, ip := range ips {
			addrs = append(addrs, netip.AddrPortFrom(ip, port).String())
		}
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, k, srv) })
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			srv.close()
			return nil, fmt.Errorf("listen on %s for %s health checks: %w", a, k, err)
		}
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		srv.servers = append(srv.servers, hs)
		go func() { _ = hs.Serve(ln) }()
	}
	return srv, nil
}

func (srv *hcServer) close() {
	for _, hs := range srv.servers {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = hs.Shutdown(ctx)
		cancel()
	}
}

// hcBody is kube-proxy's healthCheckNodePort body.
type hcBody struct {
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

func (s *Services) serve(w http.ResponseWriter, k proxier.ServiceKey, srv *hcServer) {
	count := int(srv.count.Load())
	var b hcBody
	b.Service.Namespace, b.Service.Name = k.Namespace, k.Name
	b.LocalEndpoints = count
	b.ServiceProxyHealthy = s.Healthy == nil || s.Healthy()
	code := http.StatusOK
	if count == 0 || !b.ServiceProxyHealthy {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(count))
	writeJSON(w, code, b)
}

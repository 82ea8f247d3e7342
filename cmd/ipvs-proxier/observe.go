package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/ipvs-proxier/ipvs-proxier/sync/health"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
	"github.com/ipvs-proxier/ipvs-proxier/sync/pressure"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
)

// taintToBeDeleted is the cluster autoscaler's taint on a node it is removing; kube-proxy
// fails /healthz on such a node so load balancers drain it first (KEP-3836).
const taintToBeDeleted = "ToBeDeletedByClusterAutoscaler"

// nodeEligible reports whether the node should receive load-balancer traffic.
func nodeEligible(node *v1.Node) bool {
	if node == nil || node.DeletionTimestamp != nil {
		return false
	}
	return !slices.ContainsFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Key == taintToBeDeleted })
}

// nodeEvents publishes Events on this node's Node object.
type nodeEvents struct {
	recorder record.EventRecorder
	node     string
}

func (n nodeEvents) NodeEvent(eventType, reason, message string) {
	// kube-proxy refers to its Node with the name as UID, so Events group per node.
	ref := &v1.ObjectReference{Kind: "Node", Name: n.node, UID: types.UID(n.node), APIVersion: "v1"}
	n.recorder.Event(ref, eventType, reason, message)
}

// bindRetry is how long serve waits between attempts to get its port. kube-proxy
// retries its healthz and metrics servers every 5 s (cmd/kube-proxy/app/server.go,
// serveHealthz and serveMetrics): during a takeover the old pod can hold 10256 or
// 10249 for a few seconds, and a daemon that gave up would stay without /livez until
// the kubelet restarted it.
const bindRetry = 5 * time.Second

// serve runs an HTTP server on addr until ctx is done, in the background. A bind or
// serve failure is logged and retried every bindRetry, never fatal: the proxy keeps
// programming the kernel meanwhile.
func serve(ctx context.Context, log *zap.Logger, what, addr string, h http.Handler) {
	serveEvery(ctx, log, what, addr, h, bindRetry)
}

func serveEvery(ctx context.Context, log *zap.Logger, what, addr string, h http.Handler, every time.Duration) {
	if addr == "" || addr == "0" {
		return
	}
	go func() {
		for {
			err := serveOnce(ctx, log, what, addr, h)
			if ctx.Err() != nil {
				return
			}
			log.Error("Cannot serve "+what+"; retrying", zap.String("address", addr), zap.Duration("retry", every), zap.Error(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
		}
	}()
}

// serveOnce binds addr and serves until ctx is done (nil) or the server fails.
func serveOnce(ctx context.Context, log *zap.Logger, what, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	defer stop()
	log.Info("Serving "+what, zap.String("address", ln.Addr().String()))
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// metricsHandler serves /metrics plus kube-proxy's /healthz ping and /proxyMode, our
// /status, and /debug/pprof with profiling on (the metrics address is loopback by
// default).
func metricsHandler(m *metrics.Metrics, profiling bool, status func() any) http.Handler {
	mux := http.NewServeMux()
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/proxyMode", health.ProxyMode)
	mux.HandleFunc("/status", health.StatusHandler(status))
	return mux
}

// statusReport is the /status body; `ipvs-proxier status` decodes it.
type statusReport struct {
	Node    string `json:"node"`
	Version string `json:"version"`
	// RulesBackend is --rules-backend: iptables or nftables.
	RulesBackend string `json:"rulesBackend"`
	Sync         struct {
		Healthy bool `json:"healthy"`
		// Ready is what /readyz answers (health.Server.Readiness), and NotReady why not.
		Ready       bool      `json:"ready"`
		NotReady    string    `json:"notReadyReason,omitempty"`
		LastSync    time.Time `json:"lastSync"`
		LastSuccess time.Time `json:"lastSuccess"`
		// LastError is the last failed sync's error, one line per failed write, cut
		// after maxLastErrorBytes; LastErrorLines counts the lines before the cut.
		LastError       string  `json:"lastError,omitempty"`
		LastErrorLines  int     `json:"lastErrorLines,omitempty"`
		LastFull        bool    `json:"lastFull"`
		LastDurationSec float64 `json:"lastDurationSeconds"`
		Syncs           int     `json:"syncs"`
	} `json:"sync"`
	APIServer            health.APIServerState `json:"apiServer"`
	Counts               metrics.Counts        `json:"counts"`
	Conntrack            pressure.State        `json:"conntrack"`
	Draining             int                   `json:"gracefulTerminationQueue"`
	HealthCheckNodePorts int                   `json:"healthCheckNodePorts"`
	TopVirtualServers    []topVS               `json:"topVirtualServers"`
	// SetupProblems: what this container could not set up on the node (setupProblem).
	SetupProblems []string `json:"setupProblems,omitempty"`
}

// maxLastErrorBytes bounds the last sync error /status carries. The error joins one
// line per failed write (about 90 bytes: "add real server 10.244.1.2:8080 to TCP
// 10.96.1.2:80: ..."), so a cold start whose writes all fail at 100,000 Services
// (100,000s of virtual and real servers) would put tens of MB into every /status. The
// daemon's log has the whole error.
const maxLastErrorBytes = 16 << 10

// firstLines returns the lines of s that fit in max bytes (at least part of the first,
// cut at a rune boundary) and how many lines s has.
func firstLines(s string, limit int) (string, int) {
	if s == "" {
		return "", 0
	}
	lines := strings.Count(s, "\n") + 1
	if len(s) <= limit {
		return s, lines
	}
	cut := strings.LastIndexByte(s[:limit+1], '\n')
	if cut <= 0 {
		cut = limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
	}
	return s[:cut], lines
}

// topVS is one line of the busiest virtual servers.
type topVS struct {
	Service       string `json:"service"`
	VirtualServer string `json:"virtualServer"`
	Connections   uint64 `json:"connections"`
	BytesIn       uint64 `json:"bytesIn"`
	BytesOut      uint64 `json:"bytesOut"`
}

// statusSources are the parts /status summarises.
type statusSources struct {
	node    string
	syncer  *reconcile.Syncer
	proxy   *health.Proxy
	ready   func() health.Readiness // what /readyz answers
	monitor *pressure.Monitor
	hc      *health.Services
	api     *health.APIServer
	setup   []string
}

func (s statusSources) report() any {
	var r statusReport
	r.Node, r.Version, r.SetupProblems = s.node, version, s.setup
	r.RulesBackend = s.syncer.Config().RulesBackend.Name
	st, ps := s.syncer.Status(), s.proxy.State()
	rd := s.ready()
	r.Sync.Healthy, r.Sync.Ready, r.Sync.NotReady = ps.Healthy, rd.Ready, rd.Reason
	r.Sync.LastSync, r.Sync.LastSuccess = st.LastSync, st.LastSuccess
	r.Sync.LastError, r.Sync.LastErrorLines = firstLines(st.LastError, maxLastErrorBytes)
	r.Sync.LastFull, r.Sync.LastDurationSec, r.Sync.Syncs = st.LastFull, st.LastDuration.Seconds(), st.Syncs
	r.Counts, r.Draining = metrics.Counts(s.syncer.Counts()), s.syncer.Draining()
	if s.api != nil {
		r.APIServer = s.api.State()
	}
	r.Conntrack = s.monitor.State()
	r.HealthCheckNodePorts = len(s.hc.Ports())
	stats, _ := s.syncer.VSStats()
	r.TopVirtualServers = topVirtualServers(stats, reconcile.StatusBusiest)
	return r
}

// topVirtualServers returns our n busiest virtual servers by connections scheduled, as
// the last full sync read them (the syncer keeps them sorted, reconcile.StatusBusiest
// at least). Only those n are formatted: /status is read while 60,000 virtual servers
// are programmed.
func topVirtualServers(v *ipvs.VSStats, n int) []topVS {
	if v == nil {
		return nil
	}
	out := make([]topVS, 0, min(n, len(v.Busiest)))
	for _, o := range v.Busiest[:min(n, len(v.Busiest))] {
		out = append(out, topVS{Service: o.Owner.Namespace + "/" + o.Owner.Name, VirtualServer: o.Key.String(),
			Connections: o.Stats.Connections, BytesIn: o.Stats.BytesIn, BytesOut: o.Stats.BytesOut})
	}
	return out
}

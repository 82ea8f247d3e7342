// Package health serves the daemon's health endpoints with kube-proxy's contracts
// (pkg/proxy/healthcheck): /healthz, /livez, /readyz, /proxyMode and /status on
// --healthz-bind-address, and one listener per healthCheckNodePort of an ETP=Local
// LoadBalancer Service.
package health

import (
	"sync"
	"time"
)

// Proxy tracks whether the sync loop keeps up. Like kube-proxy's ProxyHealthServer it is
// unhealthy when a change has waited longer than the timeout (2 × syncPeriod) without a
// successful sync. It is safe for concurrent use.
type Proxy struct {
	mu          sync.Mutex
	timeout     time.Duration
	now         func() time.Time
	lastUpdated time.Time
	oldestQueue time.Time
	ready       bool
}

// NewProxy returns a tracker; now may be nil for time.Now.
func NewProxy(timeout time.Duration, now func() time.Time) *Proxy {
	if now == nil {
		now = time.Now
	}
	return &Proxy{timeout: timeout, now: now, lastUpdated: now()}
}

// Queued records that a change waits for a sync; the oldest waiting one counts.
func (p *Proxy) Queued() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.oldestQueue.IsZero() {
		p.oldestQueue = p.now()
	}
}

// Updated records a successful sync: everything queued is programmed.
func (p *Proxy) Updated() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastUpdated, p.oldestQueue, p.ready = p.now(), time.Time{}, true
}

// State is a snapshot for the handlers.
type State struct {
	LastUpdated time.Time
	Now         time.Time
	Healthy     bool
	// Ready is true once a sync succeeded (which needs the informers synced).
	Ready bool
}

// State returns the current health.
func (p *Proxy) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	healthy := p.oldestQueue.IsZero() || now.Sub(p.oldestQueue) < p.timeout
	return State{LastUpdated: p.lastUpdated, Now: now, Healthy: healthy, Ready: p.ready}
}

// Healthy reports whether the proxy is healthy now.
func (p *Proxy) Healthy() bool { return p.State().Healthy }

package health

import (
	"context"
	"time"

	"sync"
)

// APIServer tracks whether the daemon reaches the API server, so that a daemon that
// cannot make progress says so: in /readyz, in /status and in a log line at a steady
// interval. A node whose proxy state is empty (new, rebooted, kube-proxy removed) cannot
// reach the `kubernetes` Service's ClusterIP until a proxy programs it, so a daemon
// configured to dial it never lists anything; before this it looked healthy forever.
// It is safe for concurrent use.
type APIServer struct {
	// Server is the address the client dials, for the messages.
	Server string

	mu      sync.Mutex
	now     func() time.Time
	err     error
	since   time.Time // first failure of the current outage
	suspect bool      // a watch failed; the next probe decides
}

// NewAPIServer returns a tracker for server; now may be nil for time.Now.
func NewAPIServer(server string, now func() time.Time) *APIServer {
	if now == nil {
		now = time.Now
	}
	return &APIServer{Server: server, now: now}
}

// APIServerState is a snapshot for /status and /readyz.
type APIServerState struct {
	Server    string    `json:"server"`
	Reachable bool      `json:"reachable"`
	Error     string    `json:"error,omitempty"`
	Since     time.Time `json:"since,omitzero"`
}

// Suspect records that a list or watch failed: the next probe checks the server. A
// single watch error is routine (a restarted apiserver closes watches), so it alone
// does not make the daemon unready.
func (a *APIServer) Suspect() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.suspect = true
}

// Probed records the result of a probe.
func (a *APIServer) Probed(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		a.err, a.since, a.suspect = nil, time.Time{}, false
		return
	}
	if a.err == nil {
		a.since = a.now()
	}
	a.err = err
}

// needsProbe reports whether a probe is due: while the informers have not synced, a
// watch failed, or the last probe failed.
func (a *APIServer) needsProbe(synced bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !synced || a.suspect || a.err != nil
}

// State returns the current state.
func (a *APIServer) State() APIServerState {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := APIServerState{Server: a.Server, Reachable: a.err == nil, Since: a.since}
	if a.err != nil {
		st.Error = a.err.Error()
	}
	return st
}

// Watch probes the server every interval while a probe is due (see needsProbe) until ctx
// is done, and calls report after each probe with its error and whether the informers
// have synced, so the caller logs at a steady interval. probe must return within the
// interval (give it a timeout). Nothing is sent while the informers are synced and no
// watch failed: a healthy daemon adds no requests.
func (a *APIServer) Watch(ctx context.Context, interval time.Duration, synced func() bool,
	probe func(context.Context) error, report func(err error, synced bool)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if s := synced(); a.needsProbe(s) {
			err := probe(ctx)
			if ctx.Err() != nil {
				return
			}
			a.Probed(err)
			report(err, s)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

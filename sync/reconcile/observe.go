package reconcile

import (
	"net/netip"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// HealthCheckSink serves the healthCheckNodePorts of ETP=Local LoadBalancers. The
// syncer tells it what changed; Apply opens and closes listeners.
type HealthCheckSink interface {
	// SetHealthCheck records one Service's health check; nil removes it.
	SetHealthCheck(k proxier.ServiceKey, hc *proxier.HealthCheck)
	// ReplaceHealthChecks records the whole set, after a full sync.
	ReplaceHealthChecks(all map[proxier.ServiceKey]proxier.HealthCheck)
	// SetAddresses sets the node addresses the listeners use (nil: every address;
	// empty: none), after each full sync: nodePortAddresses, `primary` included, over
	// the node's addresses as they are now.
	SetAddresses(ips []netip.Addr)
	// Apply opens and closes listeners to match, retrying ones that failed before.
	Apply()
}

// Observer is told what the writer did, for metrics (sync/metrics implements it; the
// daemon sets it): the writer imports no observer. Its methods are called with the
// syncer's lock held, so they must not block.
type Observer interface {
	// ObserveSync records a sync: full or partial, how long it took, its error, its end.
	ObserveSync(full bool, took time.Duration, err error, end time.Time)
	// ObserveProgramming records a network-programming latency: from an EndpointSlice
	// change's trigger time to the end of the sync that programmed it.
	ObserveProgramming(f kernel.Family, latency time.Duration)
	// KernelRefused counts a write the kernel refused for what it carries, by object
	// kind ("virtual_server", "real_server", "address", "set_member").
	KernelRefused(object string)
	// IptablesRestoreFailed counts a failed restore of a family's rules.
	IptablesRestoreFailed(f kernel.Family)
	// ConntrackReconciled records a UDP conntrack reconcile of a family: how long it
	// took and how many flows it deleted.
	ConntrackReconciled(f kernel.Family, took time.Duration, deleted int)
}

// noObserver tells no one.
type noObserver struct{}

func (noObserver) ObserveSync(bool, time.Duration, error, time.Time)     {}
func (noObserver) ObserveProgramming(kernel.Family, time.Duration)       {}
func (noObserver) KernelRefused(string)                                  {}
func (noObserver) IptablesRestoreFailed(kernel.Family)                   {}
func (noObserver) ConntrackReconciled(kernel.Family, time.Duration, int) {}

// latencies feeds the network-programming latency metric: the EndpointSlice changes'
// last-change-trigger-times, queued until the sync that programs them succeeds.
type latencies struct {
	// since is the syncer's start: trigger times older than it are skipped.
	since time.Time
	// seen is the newest trigger time seen of each Service; queued are the latencies to
	// record.
	seen   map[proxier.ServiceKey]time.Time
	queued []trigger
}

// trigger is an EndpointSlice change's last-change-trigger-time, with the slice's family.
type trigger struct {
	at     time.Time
	family kernel.Family
}

// note queues the network-programming latency of k's slices (taken: their trigger
// times since the last take) whose last-change-trigger-time is newer than any seen
// before. Trigger times older than the syncer are skipped: on start every slice would
// report its age, not a latency (as kube-proxy's endpointschangetracker does). nSlices
// is how many slices k has now.
func (l *latencies) note(k proxier.ServiceKey, taken []source.Trigger, nSlices int) {
	seen, had := l.seen[k]
	newest := seen
	for _, tr := range taken {
		if !tr.At.After(l.since) || !tr.At.After(seen) {
			continue
		}
		fam := kernel.IPv4
		if tr.IPv6 {
			fam = kernel.IPv6
		}
		l.queued = append(l.queued, trigger{at: tr.At, family: fam})
		if tr.At.After(newest) {
			newest = tr.At
		}
	}
	switch {
	case had && nSlices == 0:
		delete(l.seen, k)
	case newest.After(seen):
		l.seen[k] = newest
	}
}

// observe records the queued latencies after a successful sync that ended at end.
func (l *latencies) observe(o Observer, end time.Time) {
	for _, t := range l.queued {
		o.ObserveProgramming(t.family, end.Sub(t.at))
	}
	l.queued = l.queued[:0]
}

// healthCheckAddrs returns the addresses healthCheckNodePorts listen on, as NodePorts do:
// every address when nodePortAddresses restricts no family, else the node IPs it allows
// (none, not nil, when no node IP is: "primary" before the Node has one).
func healthCheckAddrs(cfg *proxier.Config) []netip.Addr {
	if cfg.NodePortAllAddresses() {
		return nil
	}
	out := []netip.Addr{}
	for _, a := range cfg.NodeIPs {
		if cfg.NodePortAllowed(a) {
			out = append(out, a)
		}
	}
	return out
}

// observeState is what readers and metrics see.
type observeState struct {
	// observer is Options.Observer, or noObserver.
	observer Observer
	status   Status
	// started is when the syncer was made.
	started   time.Time
	latencies latencies
}

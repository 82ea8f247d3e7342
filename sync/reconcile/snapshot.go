package reconcile

import (
	"sync/atomic"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
)

// Counts are the kernel objects programmed.
type Counts struct {
	Services, VirtualServers, RealServers, SetEntries, Addresses int
}

// Snapshot is what the readers off the sync path (/metrics, /status, the health
// checks) see: published at the end of each sync, never modified after. Reading it
// never waits for a sync; a full sync at 30,000 Services holds the syncer's lock for
// seconds, and a scrape or `ipvs-proxier status` used to wait that long.
type Snapshot struct {
	Status Status
	Counts Counts
	// Draining is how many real servers are draining at weight 0.
	Draining int
	// NoLocal counts the Services on the fallback of an internal ([f][0]) or external
	// ([f][1]) Local traffic policy, per family index f (proxier.FamilyIndex).
	NoLocal [2][2]int
	// VSStats are our virtual servers' counters as the last full sync read them
	// (ipvs/stats.go; shared, read-only; nil before the first); DumpFailed is set when the
	// last full sync could not read them (VSStats are then the read's before).
	VSStats    *ipvs.VSStats
	DumpFailed bool
	// FullDue is when the next periodic full sync is due (zero: at once).
	FullDue time.Time
}

// StatusBusiest is how many of our busiest virtual servers `ipvs-proxier status`
// shows; the snapshot keeps at least that many, whatever the metrics' series limit.
const StatusBusiest = ipvs.StatusBusiest

// published is what the readers off the sync path read: the snapshot the last sync
// published, which they load without the syncer's lock.
type published struct {
	snap atomic.Pointer[Snapshot]
	now  func() time.Time
}

// Snapshot returns the state as of the end of the last sync.
func (p *published) Snapshot() *Snapshot { return p.snap.Load() }

// FullDueIn is how long until the next periodic full sync is due (negative or zero:
// it is), for the Runner's Due. It reads the published snapshot, so it never waits
// for a sync in progress.
func (p *published) FullDueIn() time.Duration { return p.snap.Load().FullDue.Sub(p.now()) }

// publish builds and publishes the snapshot; s.mu is held.
func (s *Syncer) publish() {
	n := &Snapshot{Status: s.status, Draining: s.ipvs.Draining(), VSStats: s.ipvs.Stats(), DumpFailed: s.dumpFailed, FullDue: s.fullDue(s.opts.SyncPeriod)}
	for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		in, ex := s.desired.NoLocal(f)
		n.NoLocal[proxier.FamilyIndex(f)] = [2]int{in, ex}
	}
	n.Counts = Counts{Services: s.desired.Len(), VirtualServers: s.ipvs.Len(), RealServers: s.ipvs.RealServerCount(), Addresses: s.addrs.Len()}
	n.Counts.SetEntries = s.sets.DesiredEntries() // written, or queued for retry
	s.snap.Store(n)
}

// Status returns the state of the last sync.
func (p *published) Status() Status { return p.Snapshot().Status }

// Counts returns the number of kernel objects programmed, for metrics and /status.
func (p *published) Counts() Counts { return p.Snapshot().Counts }

// VSStats returns our virtual servers' counters as the last full sync read them (nil
// before the first; shared: the caller must not modify them) and whether the last full
// sync's read failed (what sync/metrics' VSCollector reads).
func (p *published) VSStats() (*ipvs.VSStats, bool) {
	n := p.Snapshot()
	return n.VSStats, n.DumpFailed
}

// NoLocal returns the no-local-endpoint fallback counts (internal, external) of family f.
func (p *published) NoLocal(f kernel.Family) (int, int) {
	n := p.Snapshot().NoLocal[proxier.FamilyIndex(f)]
	return n[0], n[1]
}

// Draining returns how many real servers are draining at weight 0.
func (p *published) Draining() int { return p.Snapshot().Draining }

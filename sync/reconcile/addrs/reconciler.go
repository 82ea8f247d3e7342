// Package addrs is the writer's reconciler of the addresses on the dummy interface
// (kube-ipvs0), or of the local routes that stand for them (--vip-local-routes): the
// cache of what is bound, its refresh from a full sync's dump, the batched binds and
// unbinds (a full sync's many in the background), and the address watch that lets a
// full sync trust the cache. The syncer (sync/reconcile) holds its lock, decides when
// each step runs and calls them in order.
package addrs

import (
	"net/netip"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Config is what the reconciler needs of the syncer: the kernel, and the syncer's state
// it reads (the desired state, the device) or reports to (a failed write, a wait).
type Config struct {
	Addresses kernel.Addresses
	// Device names the dummy interface.
	Device func() string
	Log    *zap.Logger
	Now    func() time.Time
	// Desired returns the desired state in force.
	Desired func() *proxier.Desired
	// Failed is told of a failed bind or unbind of a, which it queues for retry. It
	// reports whether the kernel refused it for what it carries (kernel.ErrRefused):
	// such a failure is left out of the sync's error.
	Failed func(a netip.Addr, err error) (refused bool)
	// Wait waits for done, with the syncer's lock released if it is not closed yet, so
	// that partial syncs go on meanwhile.
	Wait func(done <-chan struct{})
	// Lock locks m, a write lock a full sync's batch holds while it is sent; if the
	// batch holds it, it waits with the syncer's lock released, after calling onWait
	// (nil: none).
	Lock func(m *sync.Mutex, onWait func())
	// OnWait, if set, runs when Flush waits for a full sync's batch (tests).
	OnWait func()
}

// Reconciler keeps the addresses we bound and writes the differences from the desired
// state. It is not safe for concurrent use: the syncer calls it with its lock held,
// except where a method says otherwise.
type Reconciler struct {
	cfg   Config
	addrs kernel.AddrMap[struct{}]
	// queue holds the address writes of the current apply, sent as one batch.
	queue []kernel.AddressOp
	// write is held while address writes are sent, so that those of a partial sync
	// wait for a full sync's batch in the background (batch.go).
	write sync.Mutex
	// touched records what syncs write while a full sync reads; nil otherwise.
	touched map[netip.Addr]struct{}
	watch   watch
}

// New returns an empty reconciler.
func New(cfg Config) *Reconciler { return &Reconciler{cfg: cfg} }

// Len is the number of addresses bound.
func (r *Reconciler) Len() int { return r.addrs.Len() }

// Bound reports whether a is bound, as far as the cache knows.
func (r *Reconciler) Bound(a netip.Addr) bool { return r.addrs.Has(a) }

// Record starts recording the addresses written (if not already), for a full sync that
// reads the kernel with the syncer's lock released.
func (r *Reconciler) Record() {
	if r.touched == nil {
		r.touched = map[netip.Addr]struct{}{}
	}
}

// EndRecord stops recording.
func (r *Reconciler) EndRecord() { r.touched = nil }

// touch records a cache change of the address a while a full sync reads.
func (r *Reconciler) touch(a netip.Addr) {
	if r.touched != nil {
		r.touched[a] = struct{}{}
	}
}

// Dump lists the addresses on the device. It touches only the kernel, so the syncer
// calls it with its lock released.
func (r *Reconciler) Dump(dev string) ([]netip.Addr, error) {
	return r.cfg.Addresses.ListAddresses(dev)
}

// Merge makes the cache the dumped addresses, except for those a sync wrote during the
// read, which keep their cached state.
func (r *Reconciler) Merge(dumped []netip.Addr) {
	old := r.addrs
	r.addrs = kernel.AddrMap[struct{}]{}
	r.addrs.Clear(len(dumped))
	for _, a := range dumped {
		r.addrs.Set(a, struct{}{})
	}
	for a := range r.touched {
		if old.Has(a) {
			r.addrs.Set(a, struct{}{})
		} else {
			r.addrs.Delete(a)
		}
	}
}

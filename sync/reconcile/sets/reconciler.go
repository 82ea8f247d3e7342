// Package sets is the writer's reconciler of our sets (the KUBE-* ipsets, or the sets of
// the nftables table): each set made with the capacity its desired members need, the
// members written as their desire changes, a set listed and repaired when its count
// differs (or on the heavy round), a full sync's many writes in the background, and the
// ownership sets read back to tell which virtual servers on node IPs are ours. The syncer
// (sync/reconcile) holds its lock, decides when each step runs and calls them in order.
package sets

import (
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Config is what the reconciler needs of the syncer: the kernel, and the syncer's state
// it reads (the desired state, the families served) or reports to (a failed write, a
// wait).
type Config struct {
	Sets kernel.Sets
	Log  *zap.Logger
	Now  func() time.Time
	// Families returns the IP families served: their sets are ours.
	Families func() []kernel.Family
	// Desired returns the desired state in force.
	Desired func() *proxier.Desired
	// Failed is told of a failed write of m, which it queues for retry. It reports
	// whether the kernel refused it for what it carries (kernel.ErrRefused): such a
	// failure is left out of the sync's error.
	Failed func(m kernel.Member, err error) (refused bool)
	// Wait waits for done, with the syncer's lock released if it is not closed yet, so
	// that partial syncs go on meanwhile.
	Wait func(done <-chan struct{})
	// Lock locks m, a write lock a full sync's batch holds while it is sent; if the
	// batch holds it, it waits with the syncer's lock released.
	Lock func(m *sync.Mutex, onWait func())
}

// Reconciler keeps what the writer knows of our sets (none of their members: see
// memberOp) and writes the differences from the desired state. It is not safe for
// concurrent use: the syncer calls it with its lock held, except where a method says
// otherwise.
type Reconciler struct {
	cfg Config
	// pending are sets whose creation or listing failed, or that a full sync lists; the
	// next sync lists them.
	pending map[string]struct{}
	// caps is the capacity each set was last made to hold (Sized).
	caps map[string]uint32
	// write is held while member writes are sent, so that those of a partial sync wait
	// for a full sync's batch in the background; batch is that batch (batch.go).
	write sync.Mutex
	batch *Batch
	// named: the kernel's ownership sets as read in this full sync (nil until needed).
	named *OwnershipEntries
	// sets are proxier.Sets(setsOf), for DesiredEntries.
	sets   []kernel.Set
	setsOf []kernel.Family
}

// New returns a reconciler that knows of no set yet.
func New(cfg Config) *Reconciler {
	return &Reconciler{cfg: cfg, pending: map[string]struct{}{}}
}

// Pending reports whether set is to be listed by the next sync.
func (r *Reconciler) Pending(set string) bool {
	_, ok := r.pending[set]
	return ok
}

// ForgetPending forgets the sets to list: a full sync makes and checks every set anew.
func (r *Reconciler) ForgetPending() { r.pending = map[string]struct{}{} }

// EnsureAll makes every set of the families served, each sized to its desired members;
// one that fails is left to list at the next sync, its error returned.
func (r *Reconciler) EnsureAll() ([]kernel.Set, []error) {
	var errs []error
	all := proxier.Sets(r.cfg.Families())
	for i, set := range all {
		all[i] = r.Sized(set)
		if err := r.cfg.Sets.EnsureSet(all[i]); err != nil {
			errs = append(errs, err)
			r.pending[set.Name] = struct{}{}
		}
	}
	return all, errs
}

// DesiredEntries counts the desired members of every set: written, or queued for retry.
func (r *Reconciler) DesiredEntries() int {
	if fams := r.cfg.Families(); r.setsOf == nil || !slices.Equal(r.setsOf, fams) {
		// proxier.Sets builds ~30 values: once per family list, not once per sync.
		r.sets, r.setsOf = proxier.Sets(fams), slices.Clone(fams)
	}
	desired, n := r.cfg.Desired(), 0
	for _, set := range r.sets {
		n += desired.SetLen(set.Name)
	}
	return n
}

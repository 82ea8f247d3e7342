package sets

import (
	"iter"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// BackgroundMembers is the number of set-member writes of a full sync's set repair from
// which they are sent in the background (startMembers). A variable for tests.
var BackgroundMembers = 10000

// memberChunk is how many of a background batch's writes are made into kernel.SetOps
// and sent at a time.
const memberChunk = 8192

// memberWrites are a set repair's member writes, packed: as kernel.SetOps a cold start's
// 228,004 (30,000 Services × 4) were ~25 MB more at the peak, and the heap they grew
// stayed in the RSS; packed, a member is 8 to 16 bytes (proxier.MemberList). The deletes
// are written first, so a full set has room for the adds.
type memberWrites struct{ dels, adds proxier.MemberList }

// add queues the write of e to set (a delete when del).
func (w *memberWrites) add(set string, e kernel.SetEntry, del bool) {
	m := kernel.Member{Set: set, Entry: e}
	if del {
		w.dels = w.dels.Append(m)
	} else {
		w.adds = w.adds.Append(m)
	}
}

func (w *memberWrites) len() int { return w.dels.Len() + w.adds.Len() }

// ops yields the writes, the deletes first.
func (w *memberWrites) ops() iter.Seq[kernel.SetOp] {
	return func(yield func(kernel.SetOp) bool) {
		for _, l := range []struct {
			list proxier.MemberList
			del  bool
		}{{w.dels, true}, {w.adds, false}} {
			for m := range l.list.All() {
				if !yield(kernel.SetOp{Set: m.Set, Entry: m.Entry, Delete: l.del}) {
					return
				}
			}
		}
	}
}

// Batch is a batch of set-member writes a full sync sends while it writes the virtual
// servers.
type Batch struct {
	w      memberWrites
	failed []kernel.SetOp
	errs   []error
	took   time.Duration
	done   chan struct{}
}

// startMembers sends w in the background when they are many, so that they overlap the
// virtual-server writes that follow (ipset and IPVS take their own kernel mutexes, and
// the emulated VM has two CPUs), and returns the batch to finish; with few, it writes
// them at once and returns nil. A cold start writes every member of every set: 228,004
// at 30,000 Services, the "sets" step of the first sync, which the IPVS step then waited
// for (the first sync's phases in bench/results/results.md). The sets were sized for
// their desired members just before they were listed (EnsurePending).
//
// The write lock is held until the batch is sent, so a partial sync's member writes
// (writeMembers) land after it, in the order their decisions were made. Called with the
// syncer's lock held; the batch itself never takes it.
func (r *Reconciler) startMembers(w memberWrites) (*Batch, error) {
	if w.len() < BackgroundMembers {
		return nil, r.writeMembers(slices.Collect(w.ops()))
	}
	r.write.Lock() // the syncer's lock is held: no partial sync holds this one
	b := &Batch{w: w, done: make(chan struct{})}
	begun := r.cfg.Now()
	go func() {
		defer close(b.done)
		defer r.write.Unlock()
		chunk := make([]kernel.SetOp, 0, memberChunk)
		send := func() {
			for i, err := range r.cfg.Sets.WriteEntries(chunk) {
				if err != nil {
					b.failed, b.errs = append(b.failed, chunk[i]), append(b.errs, err)
				}
			}
			chunk = chunk[:0]
		}
		for op := range b.w.ops() {
			if chunk = append(chunk, op); len(chunk) == memberChunk {
				send()
			}
		}
		send()
		b.took = r.cfg.Now().Sub(begun)
	}()
	return b, nil
}

// Finish waits for the running full sync's batch (none: nothing) with the syncer's lock
// released, so partial syncs run meanwhile, and queues its failed writes for retry as
// writeMembers does.
func (r *Reconciler) Finish(errs *[]error) {
	b := r.batch
	if b == nil {
		return
	}
	r.cfg.Wait(b.done)
	*errs = append(*errs, r.membersFailed(b.failed, b.errs))
	r.batch = nil
	r.cfg.Log.Info("Set members written alongside the virtual servers", zap.Int("writes", b.w.len()), zap.Duration("took", b.took))
}

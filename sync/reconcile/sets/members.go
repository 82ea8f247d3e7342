package sets

import (
	"errors"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// WriteChanged writes the members whose desire changed (a delta's, or the last sync's
// failed ones), but for those of a pending set, which its listing diffs.
func (r *Reconciler) WriteChanged(members map[kernel.Member]struct{}) error {
	var ops []kernel.SetOp
	for m := range members {
		if r.Pending(m.Set) {
			continue // diffed once the set is listed
		}
		ops = append(ops, r.memberOp(m))
	}
	return r.writeMembers(ops)
}

// memberOp is the write that makes the kernel agree with the desire for m. There is no
// cache of what the sets hold (it was a second copy of every member, ~20 MiB at 30,000
// Services): a member is in a delta because its desire changed, so the write is almost
// always needed, and adds and deletes are idempotent.
func (r *Reconciler) memberOp(m kernel.Member) kernel.SetOp {
	return kernel.SetOp{Set: m.Set, Entry: m.Entry, Delete: !r.cfg.Desired().HasMember(m)}
}

// writeMembers sends ops as one batch, after any a full sync sends in the background
// (startMembers); each failed one is queued for retry. The deletes go first, as the
// repair's do (memberWrites.ops): a source range widened from 192.0.2.128/25 to
// 192.0.2.0/24 is a delete and an add, and an nftables interval set refuses the add while
// the narrower element is still there (a recent kernel answers EEXIST); after the delete,
// in the same transaction, it takes it.
func (r *Reconciler) writeMembers(ops []kernel.SetOp) error {
	if len(ops) == 0 {
		return nil
	}
	slices.SortStableFunc(ops, func(a, b kernel.SetOp) int {
		switch {
		case a.Delete == b.Delete:
			return 0
		case a.Delete:
			return -1
		}
		return 1
	})
	r.cfg.Lock(&r.write, nil)
	r.growSets(ops) // not during a batch: a set remade for its capacity would lose its writes
	results := r.cfg.Sets.WriteEntries(ops)
	r.write.Unlock()
	return r.membersFailed(ops, results)
}

// membersFailed queues each failed write of ops (results: one per op) for retry.
func (r *Reconciler) membersFailed(ops []kernel.SetOp, results []error) error {
	var errs []error
	for i, err := range results {
		if err != nil {
			m := kernel.Member{Set: ops[i].Set, Entry: ops[i].Entry}
			if !r.cfg.Failed(m, err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

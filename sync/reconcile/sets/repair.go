package sets

import (
	"errors"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Check marks to list every set of all whose member count (one header-only netlink
// request) differs from the desired count, or every one when listAll. Listing all sets
// was most of an idle full sync's cost: 66,000 entries at 10,000 Services, in the VM
// ~half the CPU. A backend that cannot count (nftables: a set's size is known only by
// listing it, CountEntries -1) has every set listed up to uncountedUpTo desired members
// in all, as the virtual servers are dumped up to a bound (a set flushed by hand is back
// within syncPeriod); past that, only when listAll.
func (r *Reconciler) Check(all []kernel.Set, listAll bool, uncountedUpTo int) {
	desired := r.cfg.Desired()
	total := 0
	for _, set := range all {
		total += desired.SetLen(set.Name)
	}
	for _, set := range all {
		if _, pending := r.pending[set.Name]; pending || listAll {
			r.pending[set.Name] = struct{}{}
			continue
		}
		n, err := r.cfg.Sets.CountEntries(set.Name)
		if err != nil || (n >= 0 && n != desired.SetLen(set.Name)) || (n < 0 && total <= uncountedUpTo) {
			r.pending[set.Name] = struct{}{}
		}
	}
}

// EnsurePending (re)creates the pending sets, each sized to its desired members, and
// returns those made, which leave pending while they are listed (so a partial sync does
// not list them too). It returns none while a full sync's member batch is written into
// the sets (none is made or remade then), and none without a pending set: every partial
// sync asks, and builds no list for nothing.
func (r *Reconciler) EnsurePending() ([]kernel.Set, error) {
	if len(r.pending) == 0 || r.batch != nil {
		return nil, nil
	}
	var errs []error
	var sets []kernel.Set
	for _, set := range proxier.Sets(r.cfg.Families()) {
		if _, ok := r.pending[set.Name]; !ok {
			continue
		}
		set = r.Sized(set)
		if err := r.cfg.Sets.EnsureSet(set); err != nil {
			errs = append(errs, err)
			continue
		}
		sets = append(sets, set)
		delete(r.pending, set.Name)
	}
	return sets, errors.Join(errs...)
}

// Listing is what sets held when listed, each packed as it streamed in.
type Listing struct {
	sets   []kernel.Set
	listed []proxier.MemberList
	failed []error
}

// List lists sets. It touches only the kernel, so a full sync calls it with the
// syncer's lock released: each CheckEvery-th full sync lists every set, 228,004 entries
// at 30,000 Services, and under the lock a change arriving then waited for all of it
// (change p99 22 and 31 s against a p50 of 1.1 s in the emulated VM, 3.6 s once
// unlocked; `make bench-scale`). A partial sync's member writes meanwhile make the
// listing older than the kernel for those members; Repair compares it with the desired
// state as it then is and rewrites them, which the kernel takes as done
// (IPSET_ERR_EXIST is success), so they are neither lost nor reverted.
func (r *Reconciler) List(sets []kernel.Set) *Listing {
	// Each listing is packed as it streams in: all of them as []kernel.SetEntry were
	// the largest part of the heap when a collection met a heavy round, and the largest
	// alone (KUBE-LOOP-BACK, 120,000 members at 30,000 Services × 4) was still the
	// largest part of a heap profile once each was packed after its listing.
	l := &Listing{sets: sets, listed: make([]proxier.MemberList, len(sets)), failed: make([]error, len(sets))}
	for i, set := range sets {
		l.failed[i] = r.cfg.Sets.EachEntry(set.Name, func() { l.listed[i] = proxier.MemberList{} }, func(e kernel.SetEntry) {
			l.listed[i] = l.listed[i].Append(kernel.Member{Set: set.Name, Entry: e})
		})
	}
	return l
}

// Repair makes each listed set hold exactly its desired members, writing the
// differences; it keeps no copy of the members. A set that failed to list is pending
// again, for the next sync. In the background (a full sync), many writes are sent
// while the virtual servers are written (batch.go): Finish waits for them.
func (r *Reconciler) Repair(l *Listing, background bool) error {
	var errs []error
	var w memberWrites
	for i, set := range l.sets {
		if l.failed[i] != nil {
			r.pending[set.Name] = struct{}{}
			errs = append(errs, l.failed[i])
			continue
		}
		r.repairSet(&w, set.Name, l.listed[i])
		l.listed[i] = proxier.MemberList{} // garbage now
	}
	if background {
		var err error
		r.batch, err = r.startMembers(w)
		return errors.Join(append(errs, err)...)
	}
	return errors.Join(append(errs, r.writeMembers(slices.Collect(w.ops())))...)
}

// repairSet queues in w the writes that make the set hold exactly its desired
// members, given what it was listed to hold. A set lists each member once, so when as
// many listed members are desired as the set has desired members, none is missing: only
// then is the listing indexed to find which are. The index of the listing was a map of
// every member of every set (228,004 at 30,000 Services) on each heavy round.
func (r *Reconciler) repairSet(w *memberWrites, set string, entries proxier.MemberList) {
	desired := r.cfg.Desired()
	n := desired.CheckListed(set, entries, func(e kernel.SetEntry) { w.add(set, e, true) })
	if n == desired.SetLen(set) {
		return
	}
	listed := make(map[kernel.SetEntry]struct{}, entries.Len())
	for m := range entries.All() {
		listed[m.Entry] = struct{}{}
	}
	for e := range desired.SetEntries(set) {
		if _, ok := listed[e]; !ok {
			w.add(set, e, false)
		}
	}
}

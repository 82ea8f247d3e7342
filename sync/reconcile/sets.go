package reconcile

import (
	"errors"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// listUncountedUpTo is the desired set members, in all, up to which a backend that
// cannot count them has every set listed each full sync (below): 7,604 at 1,000 Services
// × 4, 76,004 at 10,000 (`make bench-scale`).
const listUncountedUpTo = 20000

// syncSets writes the changed members, then lists and repairs every set whose member
// count (one header-only netlink request) differs from the desired count, and every
// set on the heavy round (heavyDue) or when listAll. Listing all sets was most of an
// idle full sync's cost: 66,000 entries at 10,000 Services, in the VM ~half the CPU.
// A backend that cannot count (nftables: a set's size is known only by listing it,
// CountEntries -1) has every set listed each full sync up to listUncountedUpTo desired
// members in all, as the virtual servers are dumped up to dumpAllUpTo (a set flushed by
// hand is back within syncPeriod); past that, on the heavy round only, within CheckEvery
// full syncs, as real servers' drift is: listing the 228,004 members at 30,000 Services
// every full sync would be most of its cost.
func (s *Syncer) syncSets(sets []kernel.Set, changed *proxier.Delta, listAll bool, ph *phases) error {
	var ops []kernel.SetOp
	for m := range changed.Members {
		if _, pending := s.pendingSets[m.Set]; pending {
			continue // listed below
		}
		ops = append(ops, s.memberOp(m))
	}
	errs := []error{s.writeMembers(ops)}
	listAll = listAll || s.heavy
	total := 0
	for _, set := range sets {
		total += s.desired.SetLen(set.Name)
	}
	for _, set := range sets {
		if _, pending := s.pendingSets[set.Name]; pending || listAll {
			s.pendingSets[set.Name] = struct{}{}
			continue
		}
		n, err := s.k.IPSets.CountEntries(set.Name)
		if err != nil || (n >= 0 && n != s.desired.SetLen(set.Name)) || (n < 0 && total <= s.listUncountedUpTo) {
			s.pendingSets[set.Name] = struct{}{}
		}
	}
	return errors.Join(append(errs, s.reconcileSets(true, ph))...)
}

// reconcileSets (re)creates and lists the pending sets and makes each hold exactly its
// desired members, writing the differences; it keeps no copy of the members. A set
// that fails to list stays pending for the next sync.
//
// A full sync lists them with s.mu released (unlock), so changes are programmed
// meanwhile: each CheckEvery-th full sync lists every set, 228,004 entries at 30,000
// Services, and under the lock a change arriving then waited for all of it (change p99
// 22 and 31 s against a p50 of 1.1 s in the emulated VM, 3.6 s once unlocked; `make
// bench-scale`). The sets leave pendingSets while they are read, so a
// partial sync does not list them under the lock too. A partial sync's member writes
// during the read make the listing older than the kernel for those members; the repair
// compares it with the desired state as it then is and rewrites them, which the kernel
// takes as done (IPSET_ERR_EXIST is success), so they are neither lost nor reverted.
func (s *Syncer) reconcileSets(unlock bool, ph *phases) error {
	if len(s.pendingSets) == 0 || s.memberBatch != nil {
		// Every partial sync calls this: no set list built for nothing. And none is
		// made or remade while a full sync's member batch is written into the sets.
		return nil
	}
	var errs []error
	var sets []kernel.Set
	for _, set := range proxier.Sets(s.cfg.Families) {
		if _, ok := s.pendingSets[set.Name]; !ok {
			continue
		}
		set = s.sized(set)
		if err := s.k.IPSets.EnsureSet(set); err != nil {
			errs = append(errs, err)
			continue
		}
		sets = append(sets, set)
		delete(s.pendingSets, set.Name)
	}
	if len(sets) == 0 {
		return errors.Join(errs...)
	}
	// Each listing is packed as it streams in: all of them as []kernel.SetEntry were
	// the largest part of the heap when a collection met a heavy round, and the largest
	// alone (KUBE-LOOP-BACK, 120,000 members at 30,000 Services × 4) was still the
	// largest part of a heap profile once each was packed after its listing.
	listed := make([]proxier.MemberList, len(sets))
	failed := make([]error, len(sets))
	list := func() {
		for i, set := range sets {
			failed[i] = s.k.IPSets.EachEntry(set.Name, func() { listed[i] = proxier.MemberList{} }, func(e kernel.SetEntry) {
				listed[i] = listed[i].Append(kernel.Member{Set: set.Name, Entry: e})
			})
		}
	}
	if unlock {
		s.unlocked(list)
		ph.mark("setsListed") // the rest of the "sets" step is the repair, under the lock
		s.endRead()           // the virtual-server and address caches were merged before
		// A change to every Service while the sets were read (a Sync then only sets
		// fullAgain) asks for another full sync, as one during the dumps does.
		s.needFull, s.fullAgain = s.needFull || s.fullAgain, false
	} else {
		list()
	}
	var w memberWrites
	for i, set := range sets {
		if failed[i] != nil {
			s.pendingSets[set.Name] = struct{}{}
			errs = append(errs, failed[i])
			continue
		}
		s.repairSet(&w, set.Name, listed[i])
		listed[i] = proxier.MemberList{} // garbage now
	}
	if unlock { // a full sync: many writes go on in the background (memberbatch.go)
		var err error
		s.memberBatch, err = s.startMembers(w)
		return errors.Join(append(errs, err)...)
	}
	return errors.Join(append(errs, s.writeMembers(slices.Collect(w.ops())))...)
}

// repairSet queues in w the writes that make the set hold exactly its desired
// members, given what it was listed to hold. A set lists each member once, so when as
// many listed members are desired as the set has desired members, none is missing: only
// then is the listing indexed to find which are. The index of the listing was a map of
// every member of every set (228,004 at 30,000 Services) on each heavy round.
func (s *Syncer) repairSet(w *memberWrites, set string, entries proxier.MemberList) {
	desired := s.desired.CheckListed(set, entries, func(e kernel.SetEntry) { w.add(set, e, true) })
	if desired == s.desired.SetLen(set) {
		return
	}
	listed := make(map[kernel.SetEntry]struct{}, entries.Len())
	for m := range entries.All() {
		listed[m.Entry] = struct{}{}
	}
	for e := range s.desired.SetEntries(set) {
		if _, ok := listed[e]; !ok {
			w.add(set, e, false)
		}
	}
}

// memberOp is the write that makes the kernel agree with the desire for m. There is no
// cache of what the sets hold (it was a second copy of every member, ~20 MiB at 30,000
// Services): a member is in a delta because its desire changed, so the write is almost
// always needed, and adds and deletes are idempotent.
func (s *Syncer) memberOp(m kernel.Member) kernel.SetOp {
	return kernel.SetOp{Set: m.Set, Entry: m.Entry, Delete: !s.desired.HasMember(m)}
}

// writeMembers sends ops as one batch, after any a full sync sends in the background
// (startMembers); each failed one is queued for retry. The deletes go first, as the
// repair's do (memberWrites.ops): a source range widened from 192.0.2.128/25 to
// 192.0.2.0/24 is a delete and an add, and an nftables interval set refuses the add while
// the narrower element is still there (a recent kernel answers EEXIST); after the delete,
// in the same transaction, it takes it.
func (s *Syncer) writeMembers(ops []kernel.SetOp) error {
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
	s.lockReleased(&s.memberWrite, nil)
	s.growSets(ops) // not during a batch: a set remade for its capacity would lose its writes
	results := s.k.IPSets.WriteEntries(ops)
	s.memberWrite.Unlock()
	return s.membersFailed(ops, results)
}

// membersFailed queues each failed write of ops (results: one per op) for retry.
func (s *Syncer) membersFailed(ops []kernel.SetOp, results []error) error {
	var errs []error
	for i, err := range results {
		if err != nil {
			m := kernel.Member{Set: ops[i].Set, Entry: ops[i].Entry}
			if !s.isolated(err, refusedWrite{kind: "set_member", member: m}) {
				errs = append(errs, err)
			}
			s.retry.Members[m] = struct{}{}
		}
	}
	return errors.Join(errs...)
}

// setState is our sets and their repair.
type setState struct {
	// sets are proxier.Sets(setsOf), for publish.
	sets   []kernel.Set
	setsOf []kernel.Family
	// pendingSets are sets whose creation or listing failed; the next sync lists them.
	pendingSets map[string]struct{}
	// setCaps is the capacity each set was last made to hold (sized).
	setCaps map[string]uint32
}

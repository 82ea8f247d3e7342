package reconcile

import (
	"errors"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/sets"
)

// listUncountedUpTo is the desired set members, in all, up to which a backend that
// cannot count them has every set listed each full sync (sets.Check): 7,604 at 1,000
// Services × 4, 76,004 at 10,000 (`make bench-scale`).
const listUncountedUpTo = 20000

// syncSets writes the changed members, then lists and repairs every set whose member
// count differs from the desired count, and every set on the heavy round (heavyDue) or
// when listAll. A backend that cannot count has every set listed each full sync up to
// listUncountedUpTo desired members in all, as the virtual servers are dumped up to
// dumpAllUpTo; past that, on the heavy round only, within CheckEvery full syncs, as real
// servers' drift is: listing the 228,004 members at 30,000 Services every full sync
// would be most of its cost.
func (s *Syncer) syncSets(all []kernel.Set, changed *proxier.Delta, listAll bool, ph *phases) error {
	err := s.sets.WriteChanged(changed.Members)
	s.sets.Check(all, listAll || s.heavy, s.listUncountedUpTo)
	return errors.Join(err, s.reconcileSets(true, ph))
}

// reconcileSets (re)creates and lists the pending sets and makes each hold exactly its
// desired members (sets.Repair). A full sync lists them with s.mu released (unlock), so
// changes are programmed meanwhile (sets.List); its repair's many writes go on in the
// background while the virtual servers are written.
func (s *Syncer) reconcileSets(unlock bool, ph *phases) error {
	made, err := s.sets.EnsurePending()
	if len(made) == 0 {
		return err
	}
	var listing *sets.Listing
	if unlock {
		s.unlocked(func() { listing = s.sets.List(made) })
		ph.mark("setsListed") // the rest of the "sets" step is the repair, under the lock
		s.endRead()           // the virtual-server and address caches were merged before
		// A change to every Service while the sets were read (a Sync then only sets
		// fullAgain) asks for another full sync, as one during the dumps does.
		s.needFull, s.fullAgain = s.needFull || s.fullAgain, false
	} else {
		listing = s.sets.List(made)
	}
	return errors.Join(err, s.sets.Repair(listing, unlock))
}

// owns reports whether a virtual server found in the kernel is ours to prune
// (sets.Owns): on a dummy address, or on a node IP or a link-local address and named by
// our sets (read once per full sync, only for such a one) or in the NodePort range.
func (s *Syncer) owns(key kernel.VSKey) bool {
	onDummy := s.addrs.Bound(key.Address)
	var named *sets.OwnershipEntries
	if !onDummy && (slices.Contains(s.cfg.NodeIPs, key.Address) || key.Address.IsLinkLocalUnicast()) {
		named = s.sets.Named()
	}
	return sets.Owns(key, onDummy, s.cfg.NodeIPs, s.opts.ExcludeCIDRs, s.opts.NodePortMin, s.opts.NodePortMax, named)
}

package ipvs

import (
	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// RealServerReads is how many virtual servers' real servers a full sync reads at most
// in its rotation: one netlink dump each (IPVS_CMD_GET_DEST names one service), past
// dumpAllUpTo after a lookup each. At 30,000 Services (45,000 virtual servers) a tenth
// was 4,500 dumps and most of each full sync; 1,000 were still most of an idle node's
// CPU (0.4-1.6 s of reads and 0.3-1.0 s of lookups per light full sync in the emulated
// VM, `make bench-scale`'s daemon log). The price is the repair time of a real server
// changed by hand: RotationPeriod full syncs (160, 80 minutes, at 30,000 Services).
const RealServerReads = 500

// RotationPeriod is the number of full syncs in which every one of n virtual servers has
// its real servers read once: checkEvery, doubled until a full sync reads at most
// RealServerReads of them (between half that and that many). Doubling, not
// ⌈n/RealServerReads⌉, because n moves under churn: a key read in the rounds ≡ s mod P is
// read in the rounds ≡ s mod 2P or ≡ s+P mod 2P once the period doubles, a subset, and in
// all of them again when it halves back, so no virtual server waits longer than the larger
// period. With a period of ⌈n/RealServerReads⌉, every n crossing a multiple of
// RealServerReads moved most keys' turn, and a count that hovered there could pass a key
// over for many periods.
func RotationPeriod(checkEvery, n int) int {
	p := max(checkEvery, 1)
	for p*RealServerReads < n {
		p *= 2
	}
	return p
}

// CheckRealServersNow reports whether full sync round re-reads key's real servers. With
// CheckEvery > 1, each full sync reads a rotating 1/RotationPeriod of our virtual
// servers: 1/CheckEvery, and no more than about RealServerReads of them (reading them all
// is one netlink dump per virtual server). So hand-made real-server drift is repaired
// within RotationPeriod syncPeriods. Virtual servers themselves are checked every full
// sync (one dump).
func (r *Reconciler) CheckRealServersNow(key kernel.VSKey, round int) bool {
	if r.cfg.CheckEvery <= 1 {
		return true
	}
	return inTurn(key, round, RotationPeriod(r.cfg.CheckEvery, r.vs.Len()))
}

// inTurn reports whether full sync round is key's turn in a rotation of period full
// syncs: a hash of the key picks its place in the period.
func inTurn(key kernel.VSKey, round, period int) bool {
	h := uint32(key.Port)*2654435761 ^ uint32(key.Protocol)
	for _, b := range key.Address.AsSlice() {
		h = h*31 + uint32(b)
	}
	return h%uint32(period) == uint32(round-1)%uint32(period)
}

// RealServersDue says which virtual servers' real servers full sync round compares with
// the desired ones: those it read from the kernel this round (read), those whose desire
// changed since the last sync or whose write failed then (changed), or all when the
// desired state was rebuilt (listAll). Every other one's cached real servers are what
// the last sync that touched it made them, and still desired: comparing all of them
// (56,000 virtual servers at 30,000 Services) was a third of an idle full sync in the VM
// (a profile of `make bench-scale`). Drift behind our back shows only in a read,
// and every virtual server is read within RotationPeriod full syncs.
func (r *Reconciler) RealServersDue(changed *proxier.Delta, listAll bool, round int) func(kernel.VSKey) bool {
	if listAll {
		return nil
	}
	return func(key kernel.VSKey) bool {
		if _, ok := changed.VirtualServers[key]; ok {
			return true
		}
		p := r.vs.Get(key)
		return p == nil || p.read == int32(round)
	}
}

// checkRealServers says what full sync round does with a virtual server found in the
// kernel: nothing if it is not ours; else keep its cached real servers, or (read) read
// them: when it is new to the cache, unwanted, or its turn in the rotation has come.
func (r *Reconciler) checkRealServers(key kernel.VSKey, round int) (ours, read bool) {
	_, _, wanted := r.cfg.Desired().VirtualServer(key)
	p := r.vs.Get(key)
	if !wanted && p == nil && !r.cfg.Owns(key) {
		return false, false
	}
	return true, p == nil || !wanted || r.CheckRealServersNow(key, round)
}

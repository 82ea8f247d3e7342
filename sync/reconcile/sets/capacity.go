package sets

import (
	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Sized is set with the capacity its desired members need (capacityFor), which
// EnsureSet makes the kernel's set hold. A change of capacity is logged: past
// kube-proxy's 65,536 its IPVS mode can no longer adopt the set on a rollback
// (docs/migration.md).
func (r *Reconciler) Sized(set kernel.Set) kernel.Set {
	if set.MaxElem == 0 { // bitmap:port: a fixed range
		return set
	}
	n := r.cfg.Desired().SetLen(set.Name)
	if r.caps == nil {
		r.caps = map[string]uint32{}
	}
	set.MaxElem = capacityFor(r.caps[set.Name], n)
	last := r.caps[set.Name]
	if last == 0 { // not sized yet: compared with kube-proxy's, which a new set gets
		last = proxier.SetCapacity(0)
	}
	if last != set.MaxElem {
		r.cfg.Log.Info("set capacity changes with its members; the set is made or remade with it, its members kept",
			zap.String("set", set.Name), zap.Int("members", n), zap.Uint32("maxelem", set.MaxElem),
			zap.Uint32("kubeProxyMaxelem", proxier.SetCapacity(0)))
	}
	r.caps[set.Name] = set.MaxElem
	return set
}

// capacityFor is the capacity of a set of n desired members that was last made with
// last (0: not made by us yet): proxier.SetCapacity, except that a set grows only once
// its members no longer fit, and shrinks only once a sixteenth more members would still
// fit the smaller capacity. Without those margins a set whose members sat at a doubling
// boundary was remade, with every member copied, on each add and delete across it, or
// once at the first add: 131,072 hairpin entries at 100,000 Services x 2 endpoints,
// 7-13 s a remake in the VM (`make bench-scale`), each holding up the change.
func capacityFor(last uint32, n int) uint32 {
	c := proxier.SetCapacity(n)
	if c > last && last != 0 && uint64(n) <= uint64(last) {
		return last // still fits
	}
	if c < last && proxier.SetCapacity(n+n/16) >= last {
		return last
	}
	return c
}

// growSets remakes, before ops are written, each set they add to whose desired members
// have outgrown the capacity it was last made with, so that a partial sync's adds fit; a
// full sync sizes every set, shrinking ones too (kernel.RemakeSet).
func (r *Reconciler) growSets(ops []kernel.SetOp) {
	for _, op := range ops {
		last, ok := r.caps[op.Set]
		if op.Delete || !ok || capacityFor(last, r.cfg.Desired().SetLen(op.Set)) <= last {
			continue
		}
		for _, set := range proxier.Sets(r.cfg.Families()) {
			if set.Name != op.Set {
				continue
			}
			if err := r.cfg.Sets.EnsureSet(r.Sized(set)); err != nil {
				r.cfg.Log.Warn("Cannot grow a set; its adds fail until a sync grows it", zap.String("set", set.Name), zap.Error(err))
			}
		}
	}
}

// RecordCapacity records that set was last made to hold c members, as Sized does.
func (r *Reconciler) RecordCapacity(set string, c uint32) {
	if r.caps == nil {
		r.caps = map[string]uint32{}
	}
	r.caps[set] = c
}

package rules

import (
	"errors"
	"net/netip"
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// ReconcileUDP deletes UDP conntrack flows to one of our UDP virtual servers whose DNAT
// target (the reply's source) is not a real server of that virtual server now. The
// delete-time cleanup (clearUDP) misses flows when a delete event is lost or a delete
// fails; kube-proxy added this reconcile after such flows blackholed UDP Services
// (kubernetes#126130). It runs from a full sync, at most once per SyncPeriod, with the
// kernel filtering the dump to UDP (kubernetes#129982).
func (r *Reconciler) ReconcileUDP() {
	now := r.cfg.Now()
	if r.reconcileOff || !r.lastReconcile.IsZero() && now.Sub(r.lastReconcile) < r.cfg.SyncPeriod {
		return
	}
	r.lastReconcile = now
	stale := func(orig, reply netip.AddrPort) bool {
		vs, _, ok := r.cfg.Desired().VirtualServer(kernel.VSKey{Protocol: kernel.UDP, Address: orig.Addr(), Port: orig.Port()})
		if !ok {
			return false // not ours
		}
		for rs := range vs.RealServers.All() {
			if rs.Address == reply.Addr() && rs.Port == reply.Port() {
				return false
			}
		}
		return true
	}
	for _, f := range r.cfg.Config().Families {
		start := r.cfg.Now()
		n, err := r.cfg.Conntrack.ReconcileUDP(f, stale)
		if errors.Is(err, errors.ErrUnsupported) {
			r.reconcileOff = true
			r.cfg.Log.Warn("UDP conntrack reconcile disabled: it needs the kernel's conntrack dump filter; stale flows are still cleared when an endpoint goes",
				zap.Error(err))
			return
		}
		r.cfg.Reconciled(f, r.cfg.Now().Sub(start), n)
		if err != nil {
			r.cfg.Log.Warn("UDP conntrack reconcile failed; retried at the next full sync", zap.Stringer("family", f), zap.Int("deleted", n), zap.Error(err))
			r.lastReconcile = time.Time{}
			continue
		}
		if n > 0 {
			r.cfg.Log.Info("Deleted stale UDP conntrack flows", zap.Stringer("family", f), zap.Int("flows", n))
		}
	}
}

// ReconcileUDPNext has the next full sync run the UDP conntrack reconcile, however
// recently it ran.
func (r *Reconciler) ReconcileUDPNext() { r.lastReconcile = time.Time{} }

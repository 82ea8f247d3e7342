package reconcile

import (
	"errors"
	"net/netip"
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// reconcileUDP deletes UDP conntrack flows to one of our UDP virtual servers whose DNAT
// target (the reply's source) is not a real server of that virtual server now. The
// delete-time cleanup (clearUDP) misses flows when a delete event is lost or a delete
// fails; kube-proxy added this reconcile after such flows blackholed UDP Services
// (kubernetes#126130). It runs from a full sync, at most once per SyncPeriod, with the
// kernel filtering the dump to UDP (kubernetes#129982). s.mu is held.
func (s *Syncer) reconcileUDP() {
	now := s.opts.Now()
	if s.reconcileOff || !s.lastReconcile.IsZero() && now.Sub(s.lastReconcile) < s.opts.SyncPeriod {
		return
	}
	s.lastReconcile = now
	stale := func(orig, reply netip.AddrPort) bool {
		vs, _, ok := s.desired.VirtualServer(kernel.VSKey{Protocol: kernel.UDP, Address: orig.Addr(), Port: orig.Port()})
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
	for _, f := range s.cfg.Families {
		start := s.opts.Now()
		n, err := s.k.Conntrack.ReconcileUDP(f, stale)
		if errors.Is(err, errors.ErrUnsupported) {
			s.reconcileOff = true
			s.log.Warn("UDP conntrack reconcile disabled: it needs the kernel's conntrack dump filter; stale flows are still cleared when an endpoint goes",
				zap.Error(err))
			return
		}
		s.opts.Metrics.ConntrackReconciled(f, s.opts.Now().Sub(start), n)
		if err != nil {
			s.log.Warn("UDP conntrack reconcile failed; retried at the next full sync", zap.Stringer("family", f), zap.Int("deleted", n), zap.Error(err))
			s.lastReconcile = time.Time{}
			continue
		}
		if n > 0 {
			s.log.Info("Deleted stale UDP conntrack flows", zap.Stringer("family", f), zap.Int("flows", n))
		}
	}
}

// conntrackState is the UDP conntrack reconcile's.
type conntrackState struct {
	// lastReconcile is when it last ran; reconcileOff is set when the kernel cannot
	// filter the dump.
	lastReconcile time.Time
	reconcileOff  bool
}

package ipvs

import (
	"errors"
	"net/netip"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// removeRealServers takes real servers out of service. UDP ones go at once, with their
// conntrack flows (kubernetes#71514); TCP and SCTP ones with live connections drop to
// weight 0 and drain, bounded by GracefulTimeout (kubernetes#57841). The writes are
// queued behind the virtual server's additions.
func (r *Reconciler) removeRealServers(key kernel.VSKey, have *programmedVS, gone []kernel.RealServer) error {
	vip := netip.AddrPortFrom(key.Address, key.Port)
	if key.Protocol == kernel.UDP {
		for _, rs := range gone {
			ap := rs.AddrPort()
			r.queueRS(kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpDelete}, func() { r.clearUDP(vip, ap) })
			r.delRS(have, ap)
		}
		return nil
	}
	var fresh []kernel.RealServer
	for _, rs := range gone {
		if _, draining := r.drain[drainKey{key, rs.AddrPort()}]; !draining {
			fresh = append(fresh, rs)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	conns, err := r.connections(key)
	if err != nil {
		return err
	}
	now := r.cfg.Now()
	for _, rs := range fresh {
		ap := rs.AddrPort()
		if conns[ap] == 0 {
			r.queueRS(kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpDelete}, nil)
			r.delRS(have, ap)
			continue
		}
		rs.Weight = 0
		r.queueRS(kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpUpdate}, nil)
		r.putRS(have, rs)
		r.drain[drainKey{key, ap}] = now.Add(r.cfg.GracefulTimeout)
	}
	return nil
}

// connections lists the connection counts of a virtual server's real servers.
func (r *Reconciler) connections(key kernel.VSKey) (map[netip.AddrPort]int, error) {
	rss, err := r.cfg.IPVS.ListRealServers(key)
	if err != nil {
		return nil, err
	}
	out := make(map[netip.AddrPort]int, len(rss))
	for _, rs := range rss {
		out[rs.AddrPort()] = rs.Connections()
	}
	return out, nil
}

// Reap deletes draining real servers whose connections are gone or whose
// GracefulTimeout passed.
func (r *Reconciler) Reap() error {
	if len(r.drain) == 0 {
		return nil
	}
	byVS := map[kernel.VSKey][]netip.AddrPort{}
	for dk := range r.drain {
		byVS[dk.vs] = append(byVS[dk.vs], dk.dest)
	}
	now := r.cfg.Now()
	var errs []error
	var ops []kernel.RealServerOp
	for key, dests := range byVS {
		have := r.vs.Get(key)
		if have == nil {
			for _, d := range dests {
				delete(r.drain, drainKey{key, d})
			}
			continue
		}
		conns, err := r.connections(key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range dests {
			if conns[d] > 0 && now.Before(r.drain[drainKey{key, d}]) {
				continue
			}
			rs, ok := have.rss.get(d)
			if !ok { // gone already: nothing to delete
				delete(r.drain, drainKey{key, d})
				continue
			}
			ops = append(ops, kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpDelete})
		}
	}
	if len(ops) == 0 {
		return errors.Join(errs...)
	}
	// One batch for every server due, as Apply sends its writes.
	for i, err := range r.cfg.IPVS.WriteRealServers(ops) {
		op := ops[i]
		// A virtual server deleted behind our back took its servers with it.
		if err != nil && !errors.Is(err, kernel.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		r.touchVS(op.VS)
		r.delRS(r.vs.Get(op.VS), op.RS.AddrPort())
		delete(r.drain, drainKey{op.VS, op.RS.AddrPort()})
	}
	return errors.Join(errs...)
}

// clearUDP deletes stale UDP conntrack flows; a failure is logged, not retried, since
// the flows expire on their own.
func (r *Reconciler) clearUDP(vip, endpoint netip.AddrPort) {
	if r.cfg.Conntrack == nil {
		return
	}
	if err := r.cfg.Conntrack.ClearUDP(vip, endpoint); err != nil {
		r.cfg.Log.Warn("Cannot clear stale UDP conntrack flows", zap.Stringer("vip", vip), zap.Stringer("endpoint", endpoint), zap.Error(err))
	}
}

package reconcile

import (
	"errors"
	"net/netip"
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// removeRealServers takes real servers out of service. UDP ones go at once, with their
// conntrack flows (kubernetes#71514); TCP and SCTP ones with live connections drop to
// weight 0 and drain, bounded by GracefulTimeout (kubernetes#57841). The writes are
// queued behind the virtual server's additions.
func (s *Syncer) removeRealServers(key kernel.VSKey, have *programmedVS, gone []kernel.RealServer) error {
	vip := netip.AddrPortFrom(key.Address, key.Port)
	if key.Protocol == kernel.UDP {
		for _, rs := range gone {
			ap := rs.AddrPort()
			s.queueRS(kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpDelete}, func() { s.clearUDP(vip, ap) })
			s.delRS(have, ap)
		}
		return nil
	}
	var fresh []kernel.RealServer
	for _, rs := range gone {
		if _, draining := s.drain[drainKey{key, rs.AddrPort()}]; !draining {
			fresh = append(fresh, rs)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	conns, err := s.connections(key)
	if err != nil {
		return err
	}
	now := s.opts.Now()
	for _, rs := range fresh {
		ap := rs.AddrPort()
		if conns[ap] == 0 {
			s.queueRS(kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpDelete}, nil)
			s.delRS(have, ap)
			continue
		}
		rs.Weight = 0
		s.queueRS(kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpUpdate}, nil)
		s.putRS(have, rs)
		s.drain[drainKey{key, ap}] = now.Add(s.opts.GracefulTimeout)
	}
	return nil
}

// connections lists the connection counts of a virtual server's real servers.
func (s *Syncer) connections(key kernel.VSKey) (map[netip.AddrPort]int, error) {
	rss, err := s.k.IPVS.ListRealServers(key)
	if err != nil {
		return nil, err
	}
	out := make(map[netip.AddrPort]int, len(rss))
	for _, rs := range rss {
		out[rs.AddrPort()] = rs.Connections()
	}
	return out, nil
}

// reapDrained deletes draining real servers whose connections are gone or whose
// GracefulTimeout passed.
func (s *Syncer) reapDrained() error {
	if len(s.drain) == 0 {
		return nil
	}
	byVS := map[kernel.VSKey][]netip.AddrPort{}
	for dk := range s.drain {
		byVS[dk.vs] = append(byVS[dk.vs], dk.dest)
	}
	now := s.opts.Now()
	var errs []error
	var ops []kernel.RealServerOp
	for key, dests := range byVS {
		have := s.vs.Get(key)
		if have == nil {
			for _, d := range dests {
				delete(s.drain, drainKey{key, d})
			}
			continue
		}
		conns, err := s.connections(key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range dests {
			if conns[d] > 0 && now.Before(s.drain[drainKey{key, d}]) {
				continue
			}
			rs, ok := have.rss.get(d)
			if !ok { // gone already: nothing to delete
				delete(s.drain, drainKey{key, d})
				continue
			}
			ops = append(ops, kernel.RealServerOp{VS: key, RS: rs, Kind: kernel.OpDelete})
		}
	}
	if len(ops) == 0 {
		return errors.Join(errs...)
	}
	// One batch for every server due, as apply sends its writes.
	for i, err := range s.k.IPVS.WriteRealServers(ops) {
		op := ops[i]
		// A virtual server deleted behind our back took its servers with it.
		if err := ignore(err, kernel.ErrNotFound); err != nil {
			errs = append(errs, err)
			continue
		}
		s.touchVS(op.VS)
		s.delRS(s.vs.Get(op.VS), op.RS.AddrPort())
		delete(s.drain, drainKey{op.VS, op.RS.AddrPort()})
	}
	return errors.Join(errs...)
}

// clearUDP deletes stale UDP conntrack flows; a failure is logged, not retried, since
// the flows expire on their own.
func (s *Syncer) clearUDP(vip, endpoint netip.AddrPort) {
	if s.k.Conntrack == nil {
		return
	}
	if err := s.k.Conntrack.ClearUDP(vip, endpoint); err != nil {
		s.log.Warn("Cannot clear stale UDP conntrack flows", zap.Stringer("vip", vip), zap.Stringer("endpoint", endpoint), zap.Error(err))
	}
}

// drainState is the real servers draining at weight 0, and since when.
type drainState struct {
	drain map[drainKey]time.Time
}

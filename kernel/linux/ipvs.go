package linux

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/moby/ipvs"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// ErrTimeout is returned when a netlink call did not answer within the deadline.
var ErrTimeout = errors.New("ipvs netlink call timed out; handle recreated")

// IPVS programs IPVS through one moby/ipvs handle. moby/ipvs is not goroutine-safe, so
// calls are serialized; and since it loops forever on EAGAIN when a reply is lost
// (moby/ipvs netlink_linux.go: execute retries the 3 s receive timeout's EAGAIN), every call has a deadline after which the handle is closed and
// a new one made.
type IPVS struct {
	mu      sync.Mutex
	h       *ipvs.Handle
	timeout time.Duration
	batch   *batchConn
}

// NewIPVS opens a handle in the current network namespace.
func NewIPVS(timeout time.Duration) (*IPVS, error) {
	h, err := ipvs.New("")
	if err != nil {
		return nil, fmt.Errorf("ipvs: %w", err)
	}
	return &IPVS{h: h, timeout: timeout}, nil
}

// Close releases the handle.
func (x *IPVS) Close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.h != nil {
		x.h.Close()
		x.h = nil
	}
	if x.batch != nil {
		x.batch.sh.Socket.Close()
		x.batch = nil
	}
}

func (x *IPVS) do(op string, fn func(h *ipvs.Handle) error) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.h == nil {
		h, err := ipvs.New("")
		if err != nil {
			return fmt.Errorf("%s: ipvs: %w", op, err)
		}
		x.h = h
	}
	h := x.h
	done := make(chan error, 1)
	go func() { done <- fn(h) }()
	select {
	case err := <-done:
		return wrapErr(op, err)
	case <-time.After(x.timeout):
		h.Close() // unblocks the stuck receive
		x.h = nil
		return fmt.Errorf("%s: %w", op, ErrTimeout)
	}
}

func toService(vs kernel.VirtualServer) *ipvs.Service {
	s := &ipvs.Service{
		Address: net.IP(vs.Address.AsSlice()), Protocol: uint16(vs.Protocol), Port: vs.Port,
		SchedName: vs.Scheduler, Flags: vs.Flags & kernel.OwnFlags, Timeout: vs.Timeout,
		AddressFamily: syscall.AF_INET, Netmask: 0xffffffff,
	}
	if vs.Address.Is6() {
		s.AddressFamily, s.Netmask = syscall.AF_INET6, 128
	}
	return s
}

func keyService(k kernel.VSKey) *ipvs.Service { return toService(kernel.VirtualServer{VSKey: k}) }

func fromService(s *ipvs.Service) (kernel.VirtualServer, bool) {
	a, ok := netip.AddrFromSlice(s.Address)
	if !ok || s.FWMark != 0 {
		return kernel.VirtualServer{}, false
	}
	if s.AddressFamily == syscall.AF_INET {
		a = a.Unmap()
	}
	return kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.Protocol(s.Protocol), Address: a, Port: s.Port},
		Scheduler: s.SchedName, Flags: s.Flags, Timeout: s.Timeout}, true
}

// ListVirtualServers implements kernel.IPVS with one dump; fwmark services are skipped.
func (x *IPVS) ListVirtualServers() ([]kernel.VirtualServer, error) {
	var out []kernel.VirtualServer
	err := x.do("list virtual servers", func(h *ipvs.Handle) error {
		svcs, err := h.GetServices()
		if err != nil {
			return err
		}
		out = out[:0]
		for _, s := range svcs {
			if vs, ok := fromService(s); ok {
				out = append(out, vs)
			}
		}
		return nil
	})
	return out, err
}

// ListStats implements kernel.IPVS with the same one dump as ListVirtualServers.
func (x *IPVS) ListStats() (map[kernel.VSKey]kernel.VSStats, error) {
	out := map[kernel.VSKey]kernel.VSStats{}
	err := x.do("list virtual server stats", func(h *ipvs.Handle) error {
		svcs, err := h.GetServices()
		if err != nil {
			return err
		}
		clear(out)
		for _, s := range svcs {
			if vs, ok := fromService(s); ok {
				out[vs.VSKey] = kernel.VSStats{Connections: uint64(s.Stats.Connections), PacketsIn: uint64(s.Stats.PacketsIn),
					PacketsOut: uint64(s.Stats.PacketsOut), BytesIn: s.Stats.BytesIn, BytesOut: s.Stats.BytesOut}
			}
		}
		return nil
	})
	return out, err
}

// ListRealServers implements kernel.IPVS.
func (x *IPVS) ListRealServers(k kernel.VSKey) ([]kernel.RealServer, error) {
	var out []kernel.RealServer
	err := x.do("list real servers of "+k.String(), func(h *ipvs.Handle) error {
		ds, err := h.GetDestinations(keyService(k))
		if err != nil {
			return err
		}
		out = out[:0]
		for _, d := range ds {
			a, ok := netip.AddrFromSlice(d.Address)
			if !ok {
				continue
			}
			if d.AddressFamily == syscall.AF_INET {
				a = a.Unmap()
			}
			out = append(out, kernel.RealServer{Address: a, Port: d.Port, Weight: d.Weight,
				ActiveConns: d.ActiveConnections, InactiveConns: d.InactiveConnections})
		}
		return nil
	})
	return out, err
}

// SetTimeouts sets the IPVS tcp, tcpfin and udp timeouts (ipvsadm --set); zero values
// keep the current setting.
func (x *IPVS) SetTimeouts(tcp, tcpFin, udp time.Duration) error {
	if tcp == 0 && tcpFin == 0 && udp == 0 {
		return nil
	}
	return x.do("set timeouts", func(h *ipvs.Handle) error {
		cur, err := h.GetConfig()
		if err != nil {
			return err
		}
		if tcp > 0 {
			cur.TimeoutTCP = tcp
		}
		if tcpFin > 0 {
			cur.TimeoutTCPFin = tcpFin
		}
		if udp > 0 {
			cur.TimeoutUDP = udp
		}
		return h.SetConfig(cur)
	})
}

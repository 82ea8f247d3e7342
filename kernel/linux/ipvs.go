package linux

import (
	"errors"
	"fmt"
	gosync "sync"
	"time"

	"github.com/moby/ipvs"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// ErrTimeout is returned when a netlink call (an IPVS call, or a dump) did not answer
// within its deadline; its socket or handle is replaced.
var ErrTimeout = errors.New("netlink call timed out; socket replaced")

// IPVS programs IPVS. Writes (ipvs_batch.go), the dump of every virtual server and the
// other reads (ipvs_dump.go, ipvs_lookup.go) travel over three generic netlink sockets
// of our own, whose receive timeout ends a call that stalls. The dump of every virtual
// server takes seconds at 30,000 Services and 26 s at 100,000 in the emulated VM (the
// kernel restarts its walk of the service table for every answer it fills): on a socket
// of its own it holds up neither a sync's writes nor a partial sync's read of a leaving
// real server's connections, which waited 13 s behind one (`make bench-scale` at
// 100,000, an endpoint removal). Only the global timeouts (SetTimeouts) go through a
// moby/ipvs handle, serialized by mu (moby/ipvs is not goroutine-safe); since moby/ipvs
// loops forever on EAGAIN when a reply is lost (netlink_linux.go: execute retries the
// 3 s receive timeout's EAGAIN), its calls have a deadline after which the handle is
// closed and a new one made.
type IPVS struct {
	mu      gosync.Mutex
	h       *ipvs.Handle
	timeout time.Duration
	writes  ipvsSocket
	reads   ipvsSocket
	listing ipvsSocket // the dump of every virtual server
	lastVS  int        // virtual servers in the last dump; guarded by listing.mu
}

// NewIPVS opens a handle in the current network namespace.
func NewIPVS(timeout time.Duration) (*IPVS, error) {
	h, err := ipvs.New("")
	if err != nil {
		return nil, fmt.Errorf("ipvs: %w", err)
	}
	return &IPVS{h: h, timeout: timeout, writes: ipvsSocket{timeout: timeout}, reads: ipvsSocket{timeout: timeout},
		listing: ipvsSocket{timeout: timeout}}, nil
}

// Close releases the handle and the sockets.
func (x *IPVS) Close() {
	x.mu.Lock()
	if x.h != nil {
		x.h.Close()
		x.h = nil
	}
	x.mu.Unlock()
	for _, s := range []*ipvsSocket{&x.writes, &x.reads, &x.listing} {
		s.mu.Lock()
		s.drop()
		s.mu.Unlock()
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

// ListVirtualServers implements kernel.IPVS with one dump, read as it streams in
// (ipvs_dump.go), counters included; fwmark services are skipped.
func (x *IPVS) ListVirtualServers() ([]kernel.DumpedVS, error) {
	x.listing.mu.Lock()
	defer x.listing.mu.Unlock()
	out := make([]kernel.DumpedVS, 0, x.lastVS) // as many as last time, without regrowing
	err := x.dump(&x.listing, "list virtual servers", ipvsCmdGetSvc, nil, func(attrs []byte) {
		if vs, st, ok := parseService(attrs); ok {
			out = append(out, kernel.DumpedVS{VirtualServer: vs, Stats: st})
		}
	})
	if err == nil {
		x.lastVS = len(out)
	}
	return out, err
}

// ListRealServers implements kernel.IPVS with one dump of k's destinations.
func (x *IPVS) ListRealServers(k kernel.VSKey) ([]kernel.RealServer, error) {
	x.reads.mu.Lock()
	defer x.reads.mu.Unlock()
	af := uint16(unix.AF_INET)
	if k.Address.Unmap().Is6() {
		af = unix.AF_INET6
	}
	var out []kernel.RealServer
	err := x.dump(&x.reads, "list real servers of "+k.String(), ipvsCmdGetDest, []*nl.RtAttr{serviceKeyAttr(k)}, func(attrs []byte) {
		if rs, ok := parseDest(attrs, af); ok {
			out = append(out, rs)
		}
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

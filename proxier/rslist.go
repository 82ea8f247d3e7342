package proxier

import (
	"bytes"
	"encoding/binary"
	"iter"
	"net/netip"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// RealServerList is a virtual server's desired real servers, sorted, packed. Each is an
// endpoint with weight 1, as kube-proxy's IPVS mode programs every endpoint, so only its
// address and port are kept: an IPv4 one in 7 bytes (a length, the address, the port),
// where a kernel.RealServer is 40 with a pointer. The desired state keeps one list per
// Service port for as long as the Service lives: 4.8 MB of []kernel.RealServer at 30,000
// Services x 4 endpoints (`make bench-scale` heap profile), 1 MB packed. The zero value
// is empty; a list is read-only once made, so virtual servers may share one.
type RealServerList struct{ b []byte }

// PackRealServers returns the list of the destinations dests (any order; duplicates
// kept once; an invalid address, which translation never yields, left out), each with
// weight 1. It sorts dests in place: its callers build the slice for it. A zone is not
// kept: endpoint addresses have none (ParseAddr).
func PackRealServers(dests []netip.AddrPort) RealServerList {
	slices.SortFunc(dests, netip.AddrPort.Compare) // kernel.CompareRealServers' order
	dests = slices.Compact(dests)
	n := 0
	for _, d := range dests {
		if d.Addr().IsValid() {
			n += 3 + d.Addr().BitLen()/8
		}
	}
	if n == 0 {
		return RealServerList{}
	}
	b := make([]byte, 0, n)
	for _, d := range dests {
		if a := d.Addr(); a.IsValid() {
			b = append(b, byte(a.BitLen()/8))
			b = append(b, a.AsSlice()...)
			b = binary.BigEndian.AppendUint16(b, d.Port())
		}
	}
	return RealServerList{b: b}
}

// Len returns the number of real servers.
func (l RealServerList) Len() int {
	n := 0
	for i := 0; i < len(l.b); i += 3 + int(l.b[i]) {
		n++
	}
	return n
}

// Empty reports whether the list has no real server.
func (l RealServerList) Empty() bool { return len(l.b) == 0 }

// Equal reports whether two lists hold the same real servers.
func (l RealServerList) Equal(o RealServerList) bool { return bytes.Equal(l.b, o.b) }

// All yields the real servers in order, each with weight 1.
func (l RealServerList) All() iter.Seq[kernel.RealServer] {
	return func(yield func(kernel.RealServer) bool) {
		for i := 0; i < len(l.b); {
			n := int(l.b[i])
			var a netip.Addr
			if n == 4 {
				a = netip.AddrFrom4([4]byte(l.b[i+1 : i+5]))
			} else {
				a = netip.AddrFrom16([16]byte(l.b[i+1 : i+17]))
			}
			port := binary.BigEndian.Uint16(l.b[i+1+n:])
			if !yield(kernel.RealServer{Address: a, Port: port, Weight: 1}) {
				return
			}
			i += 3 + n
		}
	}
}

// Slice returns the real servers as a new slice.
func (l RealServerList) Slice() []kernel.RealServer { return slices.Collect(l.All()) }

// String prints the list as ipvsadm prints destinations, for tests.
func (l RealServerList) String() string {
	var b bytes.Buffer
	b.WriteByte('[')
	for rs := range l.All() {
		if b.Len() > 1 {
			b.WriteByte(' ')
		}
		b.WriteString(rs.AddrPort().String())
	}
	b.WriteByte(']')
	return b.String()
}

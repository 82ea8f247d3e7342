package proxier

import (
	"bytes"
	"encoding/binary"
	"iter"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// MemberList is a Service's set members, packed. The desired state keeps every
// Service's list for as long as the Service lives (to take its members back when it
// changes), and as []kernel.Member a member is 104 bytes: 24 MB at 30,000 Services x 4
// endpoints (228,000 members), most of it zero bytes of IPv6-sized addresses. Packed, an
// IPv4 member is 8 to 16 bytes. The zero value is empty; a list is read-only once made.
type MemberList struct {
	b []byte
	n int32
}

// Len returns the number of members.
func (l MemberList) Len() int { return int(l.n) }

// Equal reports whether two lists hold the same members in the same order.
func (l MemberList) Equal(o MemberList) bool { return l.n == o.n && bytes.Equal(l.b, o.b) }

// All yields the members in order.
func (l MemberList) All() iter.Seq[kernel.Member] {
	return func(yield func(kernel.Member) bool) {
		names := *setNames.Load()
		for b := l.b; len(b) > 0; {
			var m kernel.Member
			m, b = decodeMember(names, b)
			if !yield(m) {
				return
			}
		}
	}
}

// Slice returns the members as a slice (for tests and printing).
func (l MemberList) Slice() []kernel.Member { return slices.Collect(l.All()) }

// Append returns l with m packed at its end, as append does: l's bytes may be reused,
// so only the list returned is used after it (a list being built, never one shared).
func (l MemberList) Append(m kernel.Member) MemberList {
	l.b = encodeMember(l.b, m)
	l.n++
	return l
}

// PackMembers packs ms, in their order.
func PackMembers(ms []kernel.Member) MemberList {
	return pack(len(ms), func(i int) kernel.Member { return ms[i] })
}

// PackEntries packs the entries of set, in their order: the heavy round holds a listing
// of every set at once, and as []kernel.SetEntry an entry is 88 bytes (20 MB of the
// heap at 30,000 Services x 4) against 9 to 13 packed.
func PackEntries(set string, es []kernel.SetEntry) MemberList {
	return pack(len(es), func(i int) kernel.Member { return kernel.Member{Set: set, Entry: es[i]} })
}

// pack packs the n members member returns.
func pack(n int, member func(i int) kernel.Member) MemberList {
	if n == 0 {
		return MemberList{}
	}
	b := make([]byte, 0, n*16)
	for i := range n {
		b = encodeMember(b, member(i))
	}
	return MemberList{b: slices.Clip(b), n: int32(n)}
}

// A packed member: the set's index in setNames, a byte of flags, the protocol, the port
// (big-endian), then each address present (4 or 16 bytes; the net's prefix length
// after its address). Entries never carry zones (translation drops such addresses).
const (
	hasIP uint8 = 1 << iota
	ip6
	hasIP2
	ip2is6
	hasNet
	net6
)

// setNames are the set names packed members refer to by index: a handful, registered
// on first use and never removed, copied on write so readers take no lock.
var (
	setNames   atomic.Pointer[[]string]
	setNamesMu sync.Mutex
)

func init() { setNames.Store(&[]string{}) }

// setIndex returns name's index in setNames, registering it.
func setIndex(name string) uint8 {
	if i := slices.Index(*setNames.Load(), name); i >= 0 {
		return uint8(i)
	}
	setNamesMu.Lock()
	defer setNamesMu.Unlock()
	names := *setNames.Load()
	if i := slices.Index(names, name); i >= 0 {
		return uint8(i)
	}
	if len(names) == 256 {
		panic("proxier: more than 256 set names") // there are about 30, a fixed list (ipsets.go)
	}
	grown := append(slices.Clip(names), name)
	setNames.Store(&grown)
	return uint8(len(grown) - 1)
}

func encodeMember(b []byte, m kernel.Member) []byte {
	e := m.Entry
	var flags uint8
	flags |= addrFlags(e.IP, hasIP, ip6)
	flags |= addrFlags(e.IP2, hasIP2, ip2is6)
	if e.Net.IsValid() {
		flags |= addrFlags(e.Net.Addr(), hasNet, net6)
	}
	b = append(b, setIndex(m.Set), flags, uint8(e.Protocol))
	b = binary.BigEndian.AppendUint16(b, e.Port)
	b = appendAddr(b, e.IP)
	b = appendAddr(b, e.IP2)
	if e.Net.IsValid() {
		b = appendAddr(b, e.Net.Addr())
		b = append(b, uint8(e.Net.Bits()))
	}
	return b
}

func addrFlags(a netip.Addr, has, six uint8) uint8 {
	switch {
	case !a.IsValid():
		return 0
	case a.Is4():
		return has
	}
	return has | six
}

func appendAddr(b []byte, a netip.Addr) []byte {
	switch {
	case !a.IsValid():
		return b
	case a.Is4():
		v := a.As4()
		return append(b, v[:]...)
	}
	v := a.As16()
	return append(b, v[:]...)
}

func decodeMember(names []string, b []byte) (kernel.Member, []byte) {
	flags := b[1]
	m := kernel.Member{Set: names[b[0]], Entry: kernel.SetEntry{Protocol: kernel.Protocol(b[2]), Port: binary.BigEndian.Uint16(b[3:5])}}
	b = b[5:]
	m.Entry.IP, b = readAddr(b, flags&hasIP != 0, flags&ip6 != 0)
	m.Entry.IP2, b = readAddr(b, flags&hasIP2 != 0, flags&ip2is6 != 0)
	if flags&hasNet != 0 {
		var a netip.Addr
		a, b = readAddr(b, true, flags&net6 != 0)
		m.Entry.Net, b = netip.PrefixFrom(a, int(b[0])), b[1:]
	}
	return m, b
}

func readAddr(b []byte, has, six bool) (netip.Addr, []byte) {
	switch {
	case !has:
		return netip.Addr{}, b
	case six:
		return netip.AddrFrom16([16]byte(b[:16])), b[16:]
	}
	return netip.AddrFrom4([4]byte(b[:4])), b[4:]
}

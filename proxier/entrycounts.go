package proxier

import (
	"iter"
	"net/netip"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// entryCounts counts the Services that want each entry of one set. An entry whose
// addresses are all IPv4 (every entry of an IPv4 set: kube-proxy's sets are one family
// each) is keyed compactly: without a net (every set but the source-range ones) by an
// entryKey4 of 12 bytes, so its map slot is 16 bytes; with one by a netKey4 of 18
// (slot 24); else by an entryKey (slot 64). At 30,000 Services x 4 endpoints the counts
// of 228,004 members were 30 MB of a 197 MB heap with entryKey, 14 MB with one 18-byte
// key for every IPv4 entry (`make bench-scale` heap profiles).
type entryCounts struct {
	v4 map[entryKey4]int32
	n4 map[netKey4]int32
	v6 map[entryKey]int32
}

// entryKey4 is an entryKey whose addresses are all IPv4 and that has no net.
type entryKey4 struct {
	ip, ip2 [4]byte
	port    uint16
	proto   kernel.Protocol
	valid   uint8 // keyIP, keyIP2
}

// netKey4 is an entryKey whose addresses, its net's included, are all IPv4.
type netKey4 struct {
	entryKey4
	net  [4]byte
	bits uint8
}

// pack4 returns e's netKey4 and whether it has a net, or false if some address in it
// is not IPv4.
func pack4(e kernel.SetEntry) (k netKey4, hasNet, ok bool) {
	k.port, k.proto = e.Port, e.Protocol
	ok = put4(e.IP, &k.ip, keyIP, &k.valid) && put4(e.IP2, &k.ip2, keyIP2, &k.valid)
	if hasNet = e.Net.IsValid(); ok && hasNet {
		var v uint8
		ok, k.bits = put4(e.Net.Addr(), &k.net, keyNet, &v), uint8(e.Net.Bits())
	}
	return k, hasNet, ok
}

// put4 stores a in b and its bit in valid; false if a is valid and not IPv4.
func put4(a netip.Addr, b *[4]byte, bit uint8, valid *uint8) bool {
	switch {
	case !a.IsValid():
		return true
	case !a.Is4():
		return false
	}
	*b, *valid = a.As4(), *valid|bit
	return true
}

func (k entryKey4) entry() kernel.SetEntry {
	addr := func(b [4]byte, bit uint8) netip.Addr {
		if k.valid&bit == 0 {
			return netip.Addr{}
		}
		return netip.AddrFrom4(b)
	}
	return kernel.SetEntry{IP: addr(k.ip, keyIP), IP2: addr(k.ip2, keyIP2), Port: k.port, Protocol: k.proto}
}

func (k netKey4) entry() kernel.SetEntry {
	e := k.entryKey4.entry()
	e.Net = netip.PrefixFrom(netip.AddrFrom4(k.net), int(k.bits))
	return e
}

// add counts one more Service wanting e and reports whether it is the first.
func (c *entryCounts) add(e kernel.SetEntry) bool {
	k, hasNet, ok := pack4(e)
	switch {
	case ok && !hasNet:
		return increment(&c.v4, k.entryKey4)
	case ok:
		return increment(&c.n4, k)
	}
	return increment(&c.v6, packEntry(e))
}

func increment[K comparable](m *map[K]int32, k K) bool {
	if *m == nil {
		*m = map[K]int32{}
	}
	(*m)[k]++
	return (*m)[k] == 1
}

// remove counts one Service less wanting e and reports whether none is left.
func (c *entryCounts) remove(e kernel.SetEntry) bool {
	k, hasNet, ok := pack4(e)
	switch {
	case ok && !hasNet:
		return decrement(c.v4, k.entryKey4)
	case ok:
		return decrement(c.n4, k)
	}
	return decrement(c.v6, packEntry(e))
}

func decrement[K comparable](m map[K]int32, k K) bool {
	if m[k] <= 1 {
		delete(m, k)
		return true
	}
	m[k]--
	return false
}

// has reports whether some Service wants e.
func (c *entryCounts) has(e kernel.SetEntry) bool {
	if c == nil {
		return false
	}
	k, hasNet, ok := pack4(e)
	switch {
	case ok && !hasNet:
		return c.v4[k.entryKey4] > 0
	case ok:
		return c.n4[k] > 0
	}
	return c.v6[packEntry(e)] > 0
}

// len returns the number of entries wanted.
func (c *entryCounts) len() int {
	if c == nil {
		return 0
	}
	return len(c.v4) + len(c.n4) + len(c.v6)
}

// all yields the entries wanted, in no order.
func (c *entryCounts) all() iter.Seq[kernel.SetEntry] {
	return func(yield func(kernel.SetEntry) bool) {
		if c == nil {
			return
		}
		for k := range c.v4 {
			if !yield(k.entry()) {
				return
			}
		}
		for k := range c.n4 {
			if !yield(k.entry()) {
				return
			}
		}
		for k := range c.v6 {
			if !yield(k.entry()) {
				return
			}
		}
	}
}

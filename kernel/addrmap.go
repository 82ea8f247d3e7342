package kernel

import (
	"iter"
	"net/netip"
)

// AddrMap maps addresses to values. An IPv4 address is held as its four bytes, not as a
// netip.Addr (24 bytes, with a pointer the collector follows): a map of the 30,000
// ClusterIPs of 30,000 Services took 2.6 MB as map[netip.Addr]struct{} (`make
// bench-scale` heap profile), most of it key bytes and empty slots sized for them.
// IPv6 addresses (and IPv4-mapped ones, which are other addresses) stay netip.Addrs. The
// zero AddrMap is empty and ready to use.
type AddrMap[V any] struct {
	v4 map[[4]byte]V
	v6 map[netip.Addr]V
}

// Len returns the number of addresses.
func (m *AddrMap[V]) Len() int { return len(m.v4) + len(m.v6) }

// Lookup returns the value at a and whether there is one.
func (m *AddrMap[V]) Lookup(a netip.Addr) (V, bool) {
	if a.Is4() {
		v, found := m.v4[a.As4()]
		return v, found
	}
	v, found := m.v6[a]
	return v, found
}

// Has reports whether a is in the map.
func (m *AddrMap[V]) Has(a netip.Addr) bool {
	_, found := m.Lookup(a)
	return found
}

// Get returns the value at a, or the zero value.
func (m *AddrMap[V]) Get(a netip.Addr) V {
	v, _ := m.Lookup(a)
	return v
}

// Set puts v at a.
func (m *AddrMap[V]) Set(a netip.Addr, v V) {
	if a.Is4() {
		if m.v4 == nil {
			m.v4 = map[[4]byte]V{}
		}
		m.v4[a.As4()] = v
		return
	}
	if m.v6 == nil {
		m.v6 = map[netip.Addr]V{}
	}
	m.v6[a] = v
}

// Delete removes a.
func (m *AddrMap[V]) Delete(a netip.Addr) {
	if a.Is4() {
		delete(m.v4, a.As4())
		return
	}
	delete(m.v6, a)
}

// Clear removes every address and sizes the map for n IPv4 ones.
func (m *AddrMap[V]) Clear(n int) {
	m.v4, m.v6 = make(map[[4]byte]V, n), nil
}

// All yields every address and its value, in no order. The loop may delete what it is
// given.
func (m *AddrMap[V]) All() iter.Seq2[netip.Addr, V] {
	return func(yield func(netip.Addr, V) bool) {
		for b, v := range m.v4 {
			if !yield(netip.AddrFrom4(b), v) {
				return
			}
		}
		for a, v := range m.v6 {
			if !yield(a, v) {
				return
			}
		}
	}
}

// Keys yields every address, in no order.
func (m *AddrMap[V]) Keys() iter.Seq[netip.Addr] {
	return func(yield func(netip.Addr) bool) {
		for a := range m.All() {
			if !yield(a) {
				return
			}
		}
	}
}

package kernel

import (
	"iter"
	"net/netip"
)

// VSMap maps virtual servers to values. An IPv4 key is held as one uint64 (address,
// port, protocol), not as a VSKey: a VSKey is 40 bytes (netip.Addr is 24) and hashes
// field by field, so a Go map of 45,000 of them took three times the memory and most of
// the time of a lookup (the desired claims and the programmed cache at 30,000 Services,
// `make bench-scale` heap profile). IPv6 keys (and IPv4-mapped ones, which are another
// key) stay VSKeys. The zero VSMap is empty and ready to use.
type VSMap[V any] struct {
	v4 map[uint64]V
	v6 map[VSKey]V
}

// packVSKey returns k as a uint64 if its address is IPv4.
func packVSKey(k VSKey) (uint64, bool) {
	if !k.Address.Is4() {
		return 0, false
	}
	a := k.Address.As4()
	return uint64(a[0])<<56 | uint64(a[1])<<48 | uint64(a[2])<<40 | uint64(a[3])<<32 |
		uint64(k.Port)<<16 | uint64(k.Protocol), true
}

// unpackVSKey is packVSKey's inverse.
func unpackVSKey(p uint64) VSKey {
	a := netip.AddrFrom4([4]byte{byte(p >> 56), byte(p >> 48), byte(p >> 40), byte(p >> 32)})
	return VSKey{Protocol: Protocol(p), Address: a, Port: uint16(p >> 16)}
}

// Len returns the number of keys.
func (m *VSMap[V]) Len() int { return len(m.v4) + len(m.v6) }

// Lookup returns the value at k and whether there is one.
func (m *VSMap[V]) Lookup(k VSKey) (V, bool) {
	if p, ok := packVSKey(k); ok {
		v, found := m.v4[p]
		return v, found
	}
	v, found := m.v6[k]
	return v, found
}

// Get returns the value at k, or the zero value.
func (m *VSMap[V]) Get(k VSKey) V {
	v, _ := m.Lookup(k)
	return v
}

// Set puts v at k.
func (m *VSMap[V]) Set(k VSKey, v V) {
	if p, ok := packVSKey(k); ok {
		if m.v4 == nil {
			m.v4 = map[uint64]V{}
		}
		m.v4[p] = v
		return
	}
	if m.v6 == nil {
		m.v6 = map[VSKey]V{}
	}
	m.v6[k] = v
}

// Delete removes k.
func (m *VSMap[V]) Delete(k VSKey) {
	if p, ok := packVSKey(k); ok {
		delete(m.v4, p)
		return
	}
	delete(m.v6, k)
}

// All yields every key and its value, in no order. The loop may delete what it is given.
func (m *VSMap[V]) All() iter.Seq2[VSKey, V] {
	return func(yield func(VSKey, V) bool) {
		for p, v := range m.v4 {
			if !yield(unpackVSKey(p), v) {
				return
			}
		}
		for k, v := range m.v6 {
			if !yield(k, v) {
				return
			}
		}
	}
}

// Keys yields every key, in no order.
func (m *VSMap[V]) Keys() iter.Seq[VSKey] {
	return func(yield func(VSKey) bool) {
		for k := range m.All() {
			if !yield(k) {
				return
			}
		}
	}
}

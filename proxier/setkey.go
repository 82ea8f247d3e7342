package proxier

import (
	"net/netip"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// entryKey is a kernel.SetEntry packed without pointers, the key of Desired's member
// counts. kernel.SetEntry holds three netip values, each with a pointer (the address
// family and zone), and is 88 bytes: as a map key at 30,000 Services (228,000 members)
// its counts were 50 MB of a 291 MB heap, all of it scanned by every GC
// (a heap profile of `make bench-scale`). Set entries never carry a zone.
type entryKey struct {
	ip, ip2, net [16]byte
	port         uint16
	proto        kernel.Protocol
	bits         uint8
	// valid has a bit per address that is set (keyIP, keyIP2, keyNet) and one per
	// address that is IPv4 (key4 << those bits).
	valid uint8
}

const (
	keyIP uint8 = 1 << iota
	keyIP2
	keyNet
	key4 = 3 // shift from a valid bit to its IPv4 bit
)

// packAddr stores a in b and returns its valid bits (with bit for a valid address).
func packAddr(a netip.Addr, b *[16]byte, bit uint8) uint8 {
	if !a.IsValid() {
		return 0
	}
	*b = a.As16()
	if a.Is4() {
		return bit | bit<<key4
	}
	return bit
}

// unpackAddr is packAddr's inverse.
func unpackAddr(b [16]byte, valid, bit uint8) netip.Addr {
	switch {
	case valid&bit == 0:
		return netip.Addr{}
	case valid&(bit<<key4) != 0:
		return netip.AddrFrom16(b).Unmap()
	}
	return netip.AddrFrom16(b)
}

func packEntry(e kernel.SetEntry) entryKey {
	k := entryKey{port: e.Port, proto: e.Protocol}
	k.valid = packAddr(e.IP, &k.ip, keyIP) | packAddr(e.IP2, &k.ip2, keyIP2)
	if e.Net.IsValid() {
		k.valid |= packAddr(e.Net.Addr(), &k.net, keyNet)
		k.bits = uint8(e.Net.Bits())
	}
	return k
}

func (k entryKey) entry() kernel.SetEntry {
	e := kernel.SetEntry{IP: unpackAddr(k.ip, k.valid, keyIP), IP2: unpackAddr(k.ip2, k.valid, keyIP2), Port: k.port, Protocol: k.proto}
	if a := unpackAddr(k.net, k.valid, keyNet); a.IsValid() {
		e.Net = netip.PrefixFrom(a, int(k.bits))
	}
	return e
}

package kernel

import (
	"maps"
	"net/netip"
	"testing"
)

// TestAddrMapIsAMap: an AddrMap answers as a map[netip.Addr] would, an IPv4 address and
// its IPv4-mapped form being two keys, zones kept.
func TestAddrMapIsAMap(t *testing.T) {
	addrs := []netip.Addr{
		netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("10.96.0.2"), netip.MustParseAddr("0.0.0.0"),
		netip.MustParseAddr("255.255.255.255"), netip.MustParseAddr("::ffff:10.96.0.1"),
		netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fe80::1%eth0"), netip.MustParseAddr("fe80::1"),
	}
	var m AddrMap[int]
	want := map[netip.Addr]int{}
	if m.Len() != 0 || m.Get(addrs[0]) != 0 || m.Has(addrs[0]) {
		t.Fatal("the zero AddrMap is not empty")
	}
	for i, a := range addrs {
		m.Set(a, i+1)
		want[a] = i + 1
	}
	m.Set(addrs[1], 20)
	want[addrs[1]] = 20
	for _, a := range []netip.Addr{addrs[2], addrs[7]} {
		m.Delete(a)
		delete(want, a)
		m.Delete(a) // absent: nothing
	}
	got := maps.Collect(m.All())
	if !maps.Equal(got, want) || m.Len() != len(want) {
		t.Errorf("AddrMap holds %v (len %d), want %v", got, m.Len(), want)
	}
	for _, a := range addrs {
		v, ok := m.Lookup(a)
		if w, wok := want[a]; v != w || ok != wok || m.Has(a) != wok {
			t.Errorf("Lookup(%s) = %d, %v; want %d, %v", a, v, ok, w, wok)
		}
	}
	for a := range m.Keys() {
		m.Delete(a) // deleting while ranging
	}
	if m.Len() != 0 {
		t.Errorf("%d addresses left after deleting each while ranging", m.Len())
	}
	m.Set(addrs[5], 1)
	m.Clear(4)
	if m.Len() != 0 || m.Has(addrs[5]) {
		t.Error("Clear left addresses")
	}
}

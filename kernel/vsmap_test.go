package kernel

import (
	"maps"
	"net/netip"
	"testing"
	"unsafe"
)

// TestVSMapIsAMap: VSMap behaves as a map[VSKey] for every kind of key, an IPv4 one and
// the same address IPv4-mapped in IPv6 being two keys, and holds an IPv4 key in 8 bytes.
func TestVSMapIsAMap(t *testing.T) {
	keys := []VSKey{
		{Protocol: TCP, Address: netip.MustParseAddr("10.96.0.1"), Port: 443},
		{Protocol: UDP, Address: netip.MustParseAddr("10.96.0.1"), Port: 443},
		{Protocol: SCTP, Address: netip.MustParseAddr("255.255.255.255"), Port: 65535},
		{Protocol: TCP, Address: netip.MustParseAddr("0.0.0.0"), Port: 0},
		{Protocol: TCP, Address: netip.MustParseAddr("::ffff:10.96.0.1"), Port: 443},
		{Protocol: TCP, Address: netip.MustParseAddr("fd00::1"), Port: 443},
		{Protocol: TCP, Address: netip.MustParseAddr("fe80::1%eth0"), Port: 443},
	}
	var m VSMap[int]
	want := map[VSKey]int{}
	if m.Len() != 0 || m.Get(keys[0]) != 0 {
		t.Fatal("the zero VSMap is not empty")
	}
	for i, k := range keys {
		m.Set(k, i+1)
		want[k] = i + 1
	}
	m.Set(keys[1], 20)
	want[keys[1]] = 20
	m.Delete(keys[3])
	delete(want, keys[3])
	m.Delete(keys[3]) // absent: nothing
	got := maps.Collect(m.All())
	if !maps.Equal(got, want) || m.Len() != len(want) {
		t.Errorf("VSMap holds %v (len %d), want %v", got, m.Len(), want)
	}
	for _, k := range keys {
		v, ok := m.Lookup(k)
		if w, wok := want[k]; v != w || ok != wok {
			t.Errorf("Lookup(%s) = %d, %v; want %d, %v", k, v, ok, w, wok)
		}
	}
	for k := range m.All() {
		m.Delete(k) // deleting while ranging, as the syncer's prune does
	}
	if m.Len() != 0 {
		t.Errorf("%d keys left after deleting each while ranging", m.Len())
	}
	if p, ok := packVSKey(keys[2]); !ok || unpackVSKey(p) != keys[2] || unsafe.Sizeof(p) != 8 {
		t.Errorf("IPv4 key %s packed as %#x (%v), unpacked %s", keys[2], p, ok, unpackVSKey(p))
	}
}

package linux

import (
	"net/netip"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestLookupVirtualServersReal: looked up by key, over more than one chunk, each
// virtual server reads back as written and as the dump has it (counters included), each
// absent key as a zero entry in its own place, IPv6 too.
func TestLookupVirtualServersReal(t *testing.T) {
	x := ipvsForTest(t)
	var ops []kernel.VirtualServerOp
	var keys []kernel.VSKey
	for i := range 2*lookupChunk + 5 {
		a := netip.AddrFrom4([4]byte{10, 97, 0, byte(i + 1)})
		if i%7 == 3 {
			a = netip.AddrFrom16([16]byte{0xfd, 0, 15: byte(i + 1)})
		}
		key := kernel.VSKey{Protocol: kernel.TCP, Address: a, Port: uint16(80 + i)}
		keys = append(keys, key)
		if i%5 == 2 {
			continue // absent
		}
		vs := kernel.VirtualServer{VSKey: key, VSSettings: kernel.VSSettings{Scheduler: "rr"}}
		if i%3 == 0 {
			vs.Scheduler, vs.Flags, vs.Timeout = "sh", kernel.FlagPersistent, 600
		}
		ops = append(ops, kernel.VirtualServerOp{VS: vs})
	}
	for _, err := range x.WriteVirtualServers(ops) {
		must(t, err)
	}
	t.Cleanup(func() {
		for i := range ops {
			ops[i].Kind = kernel.OpDelete
		}
		x.WriteVirtualServers(ops)
	})
	dumped, err := x.ListVirtualServers()
	must(t, err)
	byKey := map[kernel.VSKey]kernel.DumpedVS{}
	for _, d := range dumped {
		byKey[d.VSKey] = d
	}
	got, err := x.LookupVirtualServers(keys)
	must(t, err)
	if len(got) != len(keys) {
		t.Fatalf("%d answers for %d keys", len(got), len(keys))
	}
	for i, key := range keys {
		want, present := byKey[key]
		switch {
		case !present && got[i] != (kernel.DumpedVS{}):
			t.Errorf("absent %s looked up as %+v", key, got[i])
		case present && got[i] != want:
			t.Errorf("%s looked up as %+v, dumped as %+v", key, got[i], want)
		}
	}
	if len(byKey) != len(ops) {
		t.Errorf("%d dumped, %d written", len(byKey), len(ops))
	}
}

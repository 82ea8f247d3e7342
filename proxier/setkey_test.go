package proxier

import (
	"net/netip"
	"testing"
	"unsafe"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestEntryKeyRoundTrip: every shape of set entry our sets hold comes back from its
// packed key as it went in, and different entries get different keys.
func TestEntryKeyRoundTrip(t *testing.T) {
	seen := map[entryKey]kernel.SetEntry{}
	for _, e := range setEntryShapes {
		k := packEntry(e)
		if got := k.entry(); got != e {
			t.Errorf("%v (%#v) came back as %v (%#v)", e, e, got, got)
		}
		if prev, dup := seen[k]; dup {
			t.Errorf("%v and %v share a key", prev, e)
		}
		seen[k] = e
	}
}

// setEntryShapes are every shape of set entry our sets hold.
var setEntryShapes = func() []kernel.SetEntry {
	a4, a6 := netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("fd00::1")
	return []kernel.SetEntry{
		{},
		{Port: 30080}, // bitmap:port
		{IP: a4},      // hash:ip
		{IP: a6},      // hash:ip, IPv6
		{IP: netip.MustParseAddr("::ffff:10.96.0.1")},                                          // IPv4-mapped stays IPv6
		{IP: a4, Protocol: kernel.TCP, Port: 80},                                               // hash:ip,port
		{IP: a4, Protocol: kernel.UDP, Port: 80},                                               // another protocol
		{IP: a6, Protocol: kernel.SCTP, Port: 80},                                              //
		{IP: a4, Protocol: kernel.TCP, Port: 80, IP2: a4},                                      // hash:ip,port,ip
		{IP: a4, Protocol: kernel.TCP, Port: 80, IP2: netip.MustParseAddr("10.0.0.2")},         //
		{IP: a6, Protocol: kernel.TCP, Port: 80, IP2: a6},                                      //
		{IP: a4, Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("192.168.0.0/16")}, // hash:ip,port,net
		{IP: a4, Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("192.168.0.0/24")},
		{IP: a6, Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("fd00::/64")},
		{IP: a4, Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("0.0.0.0/0")},
		{IP: a4, Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("::/0")}, // mixed: not packed as IPv4
	}
}()

// TestEntryCounts: every shape of entry is counted apart from the others, comes back as
// it went in, and is gone after as many removals as additions; the IPv4 ones take the
// compact keys.
func TestEntryCounts(t *testing.T) {
	var c entryCounts
	for _, e := range setEntryShapes {
		if !c.add(e) || c.add(e) {
			t.Errorf("%v: add reported first = false, or true twice", e)
		}
	}
	if c.len() != len(setEntryShapes) {
		t.Fatalf("%d entries counted, want %d", c.len(), len(setEntryShapes))
	}
	got := map[kernel.SetEntry]bool{}
	for e := range c.all() {
		got[e] = true
	}
	for _, e := range setEntryShapes {
		if !got[e] || !c.has(e) {
			t.Errorf("%v: not yielded (%v) or not had", e, got[e])
		}
	}
	if want := 10; len(c.v4)+len(c.n4) != want || len(c.n4) != 3 {
		t.Errorf("%d entries with compact keys (%d of them with a net), want %d (3)", len(c.v4)+len(c.n4), len(c.n4), want)
	}
	if s4, sn := unsafe.Sizeof(entryKey4{}), unsafe.Sizeof(netKey4{}); s4 != 12 || sn != 18 {
		t.Errorf("compact keys of %d and %d bytes, want 12 and 18", s4, sn)
	}
	for _, e := range setEntryShapes {
		if c.remove(e) || !c.remove(e) || c.has(e) {
			t.Errorf("%v: remove reported last too early or too late", e)
		}
	}
	if c.len() != 0 {
		t.Errorf("%d left", c.len())
	}
}

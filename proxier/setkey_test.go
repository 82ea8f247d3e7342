package proxier

import (
	"net/netip"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestEntryKeyRoundTrip: every shape of set entry our sets hold comes back from its
// packed key as it went in, and different entries get different keys.
func TestEntryKeyRoundTrip(t *testing.T) {
	a4, a6 := netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("fd00::1")
	entries := []kernel.SetEntry{
		{},
		{Port: 30080}, // bitmap:port
		{IP: a4},      // hash:ip
		{IP: a6},      // hash:ip, IPv6
		{IP: netip.MustParseAddr("::ffff:10.96.0.1")},                                          // IPv4-mapped stays IPv6
		{IP: a4, Protocol: kernel.TCP, Port: 80},                                               // hash:ip,port
		{IP: a4, Protocol: kernel.UDP, Port: 80},                                               // another protocol
		{IP: a6, Protocol: kernel.SCTP, Port: 80},                                              //
		{IP: a4, Protocol: kernel.TCP, Port: 80, IP2: a4},                                      // hash:ip,port,ip
		{IP: a6, Protocol: kernel.TCP, Port: 80, IP2: a6},                                      //
		{IP: a4, Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("192.168.0.0/16")}, // hash:ip,port,net
		{IP: a4, Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("192.168.0.0/24")},
		{IP: a6, Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("fd00::/64")},
		{IP: a4, Protocol: kernel.TCP, Port: 80, Net: netip.MustParsePrefix("0.0.0.0/0")},
	}
	seen := map[entryKey]kernel.SetEntry{}
	for _, e := range entries {
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

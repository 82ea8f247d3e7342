package addrs

import (
	"net/netip"
	"slices"
	"testing"
)

// TestMergeKeepsWhatWasWrittenDuringTheRead: a full sync's dump replaces the cache, but
// an address a sync bound or unbound while the dump was read keeps its cached state:
// the dump is older there.
func TestMergeKeepsWhatWasWrittenDuringTheRead(t *testing.T) {
	a, b, c := netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("10.96.0.2"), netip.MustParseAddr("10.96.0.3")
	r := New(Config{})
	r.addrs.Set(a, struct{}{})
	r.Record()
	r.addrs.Set(b, struct{}{}) // bound during the read
	r.touch(b)
	r.addrs.Delete(a) // unbound during the read
	r.touch(a)
	r.Merge([]netip.Addr{a, c}) // the dump: a still there, b not yet, c by someone's hand
	r.EndRecord()
	got := r.Cached()
	slices.SortFunc(got, netip.Addr.Compare)
	if want := []netip.Addr{b, c}; !slices.Equal(got, want) {
		t.Errorf("cache %v, want %v", got, want)
	}
}

package sets

import "testing"

// TestCapacityForWaitsToShrink: a set grows as soon as its members need it, and shrinks
// only with a margin, so members moving back and forth across a doubling boundary (a
// Service added and deleted) do not remake it each time; a set not made by us yet gets
// what its members need.
func TestCapacityForWaitsToShrink(t *testing.T) {
	for _, c := range []struct {
		last uint32
		n    int
		want uint32
	}{
		{0, 131072, 262144},       // not made yet
		{0, 100, 65536},           // kube-proxy's, while the members fit
		{262144, 262145, 1048576}, // grows once they do not fit
		{524288, 131072, 524288},  // one member back across the boundary: kept
		{524288, 124000, 524288},  // within a sixteenth of it: kept
		{524288, 100000, 262144},  // well below: shrinks
		{65536, 65537, 262144},
		{262144, 65536, 262144}, // back to kube-proxy's 65,536 members: kept
		{262144, 60000, 65536},  // well below: kube-proxy's again
	} {
		if got := capacityFor(c.last, c.n); got != c.want {
			t.Errorf("capacityFor(%d, %d) = %d, want %d", c.last, c.n, got, c.want)
		}
	}
}

// TestCapacityForGrowsWhenFull: a set made with room for twice its members is not remade
// while they still fit: the first add past a power of two (131,073 hairpin entries at
// 100,000 Services × 2) remade it with every member copied, holding up that change.
func TestCapacityForGrowsWhenFull(t *testing.T) {
	for _, c := range []struct {
		last uint32
		n    int
		want uint32
	}{
		{262144, 131073, 262144}, // more than half, still fits: kept
		{262144, 262144, 262144}, // full: kept
		{262144, 262145, 1048576},
		{65536, 65537, 262144}, // past kube-proxy's: at least twice the members
	} {
		if got := capacityFor(c.last, c.n); got != c.want {
			t.Errorf("capacityFor(%d, %d) = %d, want %d", c.last, c.n, got, c.want)
		}
	}
}

package proxier

import "testing"

// TestSetCapacity: kube-proxy's 65,536 while the members fit (its rollback needs the
// same maxelem), then the smallest power of two of at least twice them, within 32 bits.
func TestSetCapacity(t *testing.T) {
	for _, c := range []struct {
		n    int
		want uint32
	}{
		{0, 65536}, {1, 65536}, {65536, 65536}, {65537, 262144}, {131072, 262144}, {131073, 524288},
		{1 << 40, 1 << 31},
	} {
		if got := SetCapacity(c.n); got != c.want {
			t.Errorf("SetCapacity(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

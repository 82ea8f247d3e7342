package ipvs

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestRotationPeriod: the period is CheckEvery doubled until a full sync reads at most
// RealServerReads virtual servers, and at least half that once it has grown.
func TestRotationPeriod(t *testing.T) {
	for _, n := range []int{0, 1, 4999, 5000, 5001, 9999, 10001, 45000, 200000} {
		p := RotationPeriod(10, n)
		if q := p / 10; p%10 != 0 || q&(q-1) != 0 {
			t.Errorf("n=%d: period %d is not 10 doubled", n, p)
		}
		if reads := (n + p - 1) / p; reads > RealServerReads || (p > 10 && reads*2 < RealServerReads) {
			t.Errorf("n=%d: period %d reads %d a full sync, want %d at most and half that at least", n, p, reads, RealServerReads)
		}
	}
}

// TestRotationSurvivesChurn: the number of virtual servers moves across a step of the
// period with every full sync (Services created and deleted by churn); still no virtual
// server waits more than the larger period for its real servers to be read.
func TestRotationSurvivesChurn(t *testing.T) {
	const checkEvery = 10
	counts := []int{9990, 10010} // across 20 × RealServerReads
	limit := max(RotationPeriod(checkEvery, counts[0]), RotationPeriod(checkEvery, counts[1]))
	for i := range 2000 {
		key := kernel.VSKey{Protocol: kernel.TCP, Address: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}), Port: 80}
		last := 0
		for round := 1; round <= 20*limit; round++ {
			if !inTurn(key, round, RotationPeriod(checkEvery, counts[round%2])) {
				continue
			}
			if gap := round - last; gap > limit {
				t.Fatalf("%v read at round %d, %d full syncs after the last read: want at most %d", key, round, gap, limit)
			}
			last = round
		}
		if gap := 20*limit + 1 - last; gap > limit {
			t.Fatalf("%v not read in the last %d full syncs: want at most %d", key, gap, limit)
		}
	}
}

// TestRotationSurvivesRandomWalk: the count wanders across several steps (100 to 40,000
// virtual servers); a virtual server still waits no longer than the largest period in
// force since its last read.
func TestRotationSurvivesRandomWalk(t *testing.T) {
	const checkEvery = 10
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, 5000)
	n := 5000
	for i := range counts {
		n = min(max(n+rng.IntN(2001)-1000, 100), 40000)
		counts[i] = n
	}
	for i := range 500 {
		key := kernel.VSKey{Protocol: kernel.UDP, Address: netip.AddrFrom4([4]byte{10, 97, byte(i >> 8), byte(i)}), Port: 53}
		last, most := 0, 0
		for round := 1; round <= len(counts); round++ {
			p := RotationPeriod(checkEvery, counts[round-1])
			most = max(most, p)
			if !inTurn(key, round, p) {
				continue
			}
			if gap := round - last; last > 0 && gap > most {
				t.Fatalf("%v read at round %d, %d full syncs after the last read: the periods in force were at most %d", key, round, gap, most)
			}
			last, most = round, p
		}
	}
}

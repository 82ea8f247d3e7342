package reconcile

import (
	"runtime"
	"sync"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// translateChunk is how many Services a whole rebuild translates at once before it
// records them: the objects the source materializes for a chunk are garbage once its
// states are recorded.
const translateChunk = 512

// translated is one Service's translation and how many EndpointSlices it read.
type translated struct {
	st     *proxier.ServiceState
	slices int
}

// rebuildDesired translates every Service of keys into s.desired (empty), a chunk at a
// time, each chunk on every CPU: translation is pure (objects in, desired state out) and
// the source is safe for concurrent readers, so only the recording (updateServiceWith)
// is serial. A cold start translates every Service before it writes anything: 7.7 s
// of a first sync of 32.8 s at 30,000 Services in the emulated VM, on one of its two
// CPUs (the first sync's phases in bench/results/results.md).
func (s *Syncer) rebuildDesired(keys []proxier.ServiceKey) {
	workers := max(1, runtime.GOMAXPROCS(0))
	out := make([]translated, translateChunk)
	for start := 0; start < len(keys); start += translateChunk {
		chunk := keys[start:min(start+translateChunk, len(keys))]
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(chunk); i += workers {
					out[i] = s.translate(chunk[i])
				}
			}()
		}
		wg.Wait()
		for i, k := range chunk {
			s.updateServiceWith(k, out[i], nil)
			out[i] = translated{}
		}
	}
}

// translate translates one Service from the source. It reads only the source and
// s.cfg, so it may run beside others.
func (s *Syncer) translate(k proxier.ServiceKey) translated {
	// The informer source builds the slices anew from its compact cache at each call:
	// read them once.
	epSlices := s.src.Slices(k)
	return translated{st: proxier.Translate(&s.cfg, k, s.src.Service(k), epSlices), slices: len(epSlices)}
}

package reconcile

import (
	"sync"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// EventSink receives problems with API objects, to be published as Warning Events.
type EventSink interface {
	Warn(p proxier.Problem)
}

// problemReporter logs and publishes each distinct problem once per object: a Service
// stuck with a bad annotation yields one log line and one Event, not one per sync. When
// the problem goes away and later comes back, it is reported again.
type problemReporter struct {
	mu   sync.Mutex
	log  *zap.Logger
	sink EventSink
	seen map[proxier.ServiceKey]map[proxier.Problem]struct{}
}

func newProblemReporter(log *zap.Logger, sink EventSink) *problemReporter {
	return &problemReporter{log: log, sink: sink, seen: map[proxier.ServiceKey]map[proxier.Problem]struct{}{}}
}

// report records the current problems of one Service and reports the new ones.
func (r *problemReporter) report(key proxier.ServiceKey, probs []proxier.Problem) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(probs) == 0 {
		delete(r.seen, key)
		return
	}
	prev := r.seen[key]
	cur := make(map[proxier.Problem]struct{}, len(probs))
	for _, p := range probs {
		if _, done := cur[p]; done {
			continue
		}
		cur[p] = struct{}{}
		if _, old := prev[p]; old {
			continue
		}
		r.log.Warn("Bad input skipped", zap.String("kind", p.Kind), zap.String("namespace", p.Namespace),
			zap.String("name", p.Name), zap.String("reason", p.Reason), zap.String("message", p.Message))
		if r.sink != nil {
			r.sink.Warn(p)
		}
	}
	r.seen[key] = cur
}

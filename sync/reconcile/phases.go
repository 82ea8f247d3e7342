package reconcile

import (
	"time"

	"go.uber.org/zap"
)

// slowFullSync is the full-sync duration above which a full sync logs where its time
// went at Info (the first sync always does): kube-proxy logs every sync's duration only
// at verbosity 2, which nobody runs, so a start that took minutes said nothing.
const slowFullSync = 10 * time.Second

// slowPartialSync is the partial-sync duration above which a partial sync logs where
// its time went at Info: one change normally takes milliseconds, and a change latency
// of 10 s at 30,000 Services (`make bench-scale`) was one partial sync of
// 9 s that said only its duration, at Debug.
const slowPartialSync = time.Second

// phases times the steps of one full sync: each mark records the time since the
// previous one under the step's name.
type phases struct {
	now    func() time.Time
	last   time.Time
	fields []zap.Field
}

func newPhases(now func() time.Time) *phases {
	return &phases{now: now, last: now(), fields: make([]zap.Field, 0, 12)}
}

// mark ends the step called name; on a nil *phases it does nothing.
func (p *phases) mark(name string) {
	if p == nil {
		return
	}
	t := p.now()
	p.fields = append(p.fields, zap.Duration(name, t.Sub(p.last)))
	p.last = t
}

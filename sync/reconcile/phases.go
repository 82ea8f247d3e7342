package reconcile

import (
	"time"

	"go.uber.org/zap"
)

// slowFullSync is the full-sync duration above which a full sync logs where its time
// went at Info (the first sync always does): kube-proxy logs every sync's duration only
// at verbosity 2, which nobody runs, so a start that took minutes said nothing.
const slowFullSync = 10 * time.Second

// phases times the steps of one full sync: each mark records the time since the
// previous one under the step's name.
type phases struct {
	now    func() time.Time
	last   time.Time
	fields []zap.Field
}

func newPhases(now func() time.Time) *phases {
	return &phases{now: now, last: now(), fields: make([]zap.Field, 0, 9)}
}

// mark ends the step called name.
func (p *phases) mark(name string) {
	t := p.now()
	p.fields = append(p.fields, zap.Duration(name, t.Sub(p.last)))
	p.last = t
}

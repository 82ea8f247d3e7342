package main

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// flow is requests one after another from a netns in the node to one Service that the
// churn never touches.
type flow struct {
	Name, NS, Proto, Target string
	// Sticky: every answer must come from the pod the first one came from (ClientIP
	// session affinity).
	Sticky bool
}

// trafficLoop runs a flow and counts what it saw.
type trafficLoop struct {
	flow
	ok, failed atomic.Int64
	mu         sync.Mutex
	failures   []time.Time
	firstErrs  []string
	backend    string
	switches   int // answers from another pod than the one before (Sticky flows)
}

// requestGap is the pause between two requests of a loop: the soak's traffic is a
// constant trickle, its load on the emulated VM small beside the churn's.
const requestGap = 100 * time.Millisecond

// run asks until ctx ends. A failure is timed, so it can be laid against the faults;
// the first few are logged and handed to capture (when set) with their time.
func (l *trafficLoop) run(ctx context.Context, node *harness.Node, capture func(flow, time.Time, error)) {
	for ctx.Err() == nil {
		a, err := node.Ask(l.NS, l.Proto, l.Target)
		if err != nil {
			at := time.Now()
			l.failed.Add(1)
			l.mu.Lock()
			l.failures = append(l.failures, at)
			first := len(l.firstErrs) < 5
			if first {
				l.firstErrs = append(l.firstErrs, at.Format("15:04:05.000")+" "+err.Error())
				benchkit.Logf("traffic %s: %v", l.Name, err)
			}
			l.mu.Unlock()
			if first && capture != nil {
				capture(l.flow, at, err)
			}
			time.Sleep(requestGap)
			continue
		}
		l.ok.Add(1)
		if l.Sticky {
			pod, _, _ := strings.Cut(a, " ")
			l.mu.Lock()
			if l.backend != "" && pod != l.backend {
				l.switches++
			}
			l.backend = pod
			l.mu.Unlock()
		}
		time.Sleep(requestGap)
	}
}

// failureTimes is when the loop's requests failed.
func (l *trafficLoop) failureTimes() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.failures...)
}

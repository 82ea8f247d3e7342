package reconcile

import (
	"context"
	"time"
)

// Runner calls one function, the only writer to the kernel, with kube-proxy's
// BoundedFrequencyRunner semantics (pkg/proxy/runner): requests coalesce; two runs are
// at least minInterval apart; a run happens at least every maxInterval; and after a
// failed run the next one comes early, with exponential backoff from minInterval up to
// maxInterval (kube-proxy's IPVS proxier only logs a failed sync, pkg/proxy/ipvs/proxier.go,
// so a failure waits for the next syncPeriod).
type Runner struct {
	fn          func() error
	minInterval time.Duration
	maxInterval time.Duration
	trigger     chan struct{}
	// Due, when set, says how long until the next run is due (the Syncer's next periodic
	// full sync, Syncer.FullDueIn). After a successful run the runner waits for the
	// earlier of it and maxInterval: the timer restarts after every run, so without it a
	// partial sync 29 s after a full one put the next full sync 59 s after it, not 30.
	Due func() time.Duration
}

// NewRunner returns a runner for fn. minInterval may be 0.
func NewRunner(fn func() error, minInterval, maxInterval time.Duration) *Runner {
	return &Runner{fn: fn, minInterval: minInterval, maxInterval: maxInterval, trigger: make(chan struct{}, 1)}
}

// Run asks for a run soon. It never blocks; requests made while one is pending coalesce.
func (r *Runner) Run() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// Loop runs until ctx is done. The first run happens at once.
func (r *Runner) Loop(ctx context.Context) {
	backoff := time.Duration(0)
	next := time.NewTimer(0)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-next.C:
		case <-r.trigger:
		}
		wait := r.maxInterval
		if err := r.fn(); err != nil {
			backoff = min(max(2*backoff, r.minInterval, 100*time.Millisecond), r.maxInterval)
			wait = backoff
		} else {
			backoff = 0
			if r.Due != nil {
				wait = max(min(wait, r.Due()), 0)
			}
		}
		next.Reset(wait)
		if r.minInterval > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(r.minInterval):
			}
		}
	}
}

// RunWhen asks for a run as soon as ready reports true (checked every 100 ms), once, or
// returns when ctx is done. The daemon passes the informers' HasSynced: every run before
// they sync fails with ErrNotSynced and doubles the retry delay, and the initial list's
// events stop before HasSynced turns true, so without this request the first sync waited
// for a retry up to maxInterval (syncPeriod, 30 s) after the informers had synced.
func (r *Runner) RunWhen(ctx context.Context, ready func() bool) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !ready() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	r.Run()
}

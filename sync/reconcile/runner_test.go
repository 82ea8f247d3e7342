package reconcile

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type callLog struct {
	mu    sync.Mutex
	times []time.Time
}

func (c *callLog) add() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.times = append(c.times, time.Now())
	return len(c.times)
}

func (c *callLog) snapshot() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.times...)
}

// TestRunnerCoalescesAndBounds: a burst of requests gives few runs, at least
// minInterval apart; the periodic run comes by itself. Ratios only, no tight timing.
func TestRunnerCoalescesAndBounds(t *testing.T) {
	var log callLog
	const minI = 100 * time.Millisecond
	r := NewRunner(func() error { log.add(); return nil }, minI, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Loop(ctx); close(done) }()
	deadline := time.Now().Add(500 * time.Millisecond)
	requests := 0
	for time.Now().Before(deadline) {
		r.Run()
		requests++
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	runs := log.snapshot()
	if len(runs) < 2 || len(runs) > 7 {
		t.Errorf("%d runs for %d requests over 500ms with minInterval 100ms", len(runs), requests)
	}
	for i := 1; i < len(runs); i++ {
		if gap := runs[i].Sub(runs[i-1]); gap < minI {
			t.Errorf("runs %d and %d only %v apart", i-1, i, gap)
		}
	}
}

// TestRunnerPeriodicAndRetry: with no requests the function runs every maxInterval;
// after an error it runs again much sooner.
func TestRunnerPeriodicAndRetry(t *testing.T) {
	var log callLog
	fail := true
	r := NewRunner(func() error {
		if n := log.add(); n == 2 && fail {
			return errors.New("boom")
		}
		return nil
	}, 10*time.Millisecond, 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 1100*time.Millisecond)
	defer cancel()
	r.Loop(ctx)
	runs := log.snapshot()
	// Runs: t=0, t=300ms (fails), retry ~100ms later, then every 300ms: about 5.
	if len(runs) < 4 || len(runs) > 6 {
		t.Fatalf("%d runs in 1.1s", len(runs))
	}
	retryGap, periodGap := runs[2].Sub(runs[1]), runs[1].Sub(runs[0])
	if retryGap*2 > periodGap {
		t.Errorf("retry after error took %v, the period is %v", retryGap, periodGap)
	}
}

// TestRunnerRunsWhenReady: runs before the informers sync fail and push the retry back
// to maxInterval (an hour here); RunWhen makes the first sync follow the informers'
// sync instead of that retry.
func TestRunnerRunsWhenReady(t *testing.T) {
	var synced atomic.Bool
	var early atomic.Int32
	ran := make(chan struct{}, 1)
	r := NewRunner(func() error {
		if !synced.Load() {
			early.Add(1)
			return ErrNotSynced
		}
		select {
		case ran <- struct{}{}:
		default:
		}
		return nil
	}, 0, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Loop(ctx)
	go r.RunWhen(ctx, synced.Load)
	// The initial list's events, each a run that fails: the backoff reaches maxInterval.
	for early.Load() < 30 {
		r.Run()
		time.Sleep(time.Millisecond)
	}
	synced.Store(true)
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatal("no run within 30 s of the informers' sync: the first sync waits for the hour-long retry")
	}
}

// TestRunnerWaitsForDue: after a successful run the runner waits for Due when it is
// sooner than maxInterval (the Syncer's next periodic full sync).
func TestRunnerWaitsForDue(t *testing.T) {
	var log callLog
	three := make(chan struct{})
	r := NewRunner(func() error {
		if log.add() == 3 {
			close(three)
		}
		return nil
	}, 0, time.Hour)
	r.Due = func() time.Duration { return 10 * time.Millisecond }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Loop(ctx)
	select {
	case <-three:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d runs in 30 s with Due 10 ms: the runner waited for maxInterval (an hour)", len(log.snapshot()))
	}
}

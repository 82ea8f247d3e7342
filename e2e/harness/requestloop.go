package harness

import (
	"sync"
	"sync/atomic"
	"time"
)

// RequestLoop asks target (TCP) from netns ns on the node, one request after another,
// until the returned stop is called; stop reports how many requests were answered and
// how many failed. The time and error of the first five failures go to logf (nil: not
// logged), so a failed count says what the client saw. After a failure the loop waits
// 100 ms, so a Service that is down does not spin the VM's CPU.
func (n *Node) RequestLoop(logf func(format string, args ...any), ns, target string) (stop func() (ok, failed int64)) {
	var okN, failedN atomic.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := n.Ask(ns, "tcp", target); err != nil {
				if c := failedN.Add(1); logf != nil && c <= 5 {
					logf("%s request to %s failed: %v", time.Now().Format("15:04:05.000"), target, err)
				}
				time.Sleep(100 * time.Millisecond)
			} else {
				okN.Add(1)
			}
		}
	}()
	return func() (int64, int64) {
		close(done)
		wg.Wait()
		return okN.Load(), failedN.Load()
	}
}

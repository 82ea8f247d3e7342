package health

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// An unreachable API server makes /readyz fail with a short reason (the address and the
// error are in Reason, for /status and the log), and
// /livez stays as it was: a restart cannot fix the network.
func TestReadyzSaysWhyTheAPIServerIsUnreachable(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	p := NewProxy(time.Minute, c.now)
	a := NewAPIServer("https://10.96.0.1:443", c.now)
	h := (&Server{Proxy: p, APIServer: a}).Handler()

	_, body := get(t, h, "/readyz")
	if body["reason"] != "waiting for the first successful sync" {
		t.Errorf("fresh /readyz = %v", body)
	}
	a.Probed(errors.New("dial tcp 10.96.0.1:443: i/o timeout"))
	c.t = c.t.Add(time.Minute)
	a.Probed(errors.New("dial tcp 10.96.0.1:443: i/o timeout"))
	resp, body := get(t, h, "/readyz")
	if resp.StatusCode != 503 || body["reason"] != "the API server is unreachable" {
		t.Errorf("unreachable /readyz = %d %v", resp.StatusCode, body)
	}
	// The address, the error and since when are /status's (State) and the log's.
	if st := a.State(); st.Reachable || st.Server != "https://10.96.0.1:443" || !strings.Contains(st.Error, "i/o timeout") ||
		!st.Since.Equal(time.Unix(1000, 0)) {
		t.Errorf("State() = %+v", st)
	}
	if resp, _ := get(t, h, "/livez"); resp.StatusCode != 200 {
		t.Errorf("/livez = %d while only the API server is unreachable", resp.StatusCode)
	}

	// Synced once, then the server goes away: not ready again, ready when it is back.
	a.Probed(nil)
	p.Updated()
	if resp, body := get(t, h, "/readyz"); resp.StatusCode != 200 || body["reason"] != nil {
		t.Errorf("synced /readyz = %d %v", resp.StatusCode, body)
	}
	a.Probed(errors.New("connection refused"))
	if resp, _ := get(t, h, "/readyz"); resp.StatusCode != 503 {
		t.Errorf("outage after sync: /readyz = %d", resp.StatusCode)
	}
	if st := a.State(); st.Reachable || st.Error != "connection refused" || !st.Since.Equal(c.t) {
		t.Errorf("state %+v", st)
	}
	a.Probed(nil)
	if resp, _ := get(t, h, "/readyz"); resp.StatusCode != 200 {
		t.Errorf("recovered: /readyz = %d", resp.StatusCode)
	}
}

// Watch probes while the informers have not synced and after a watch failure, until a
// probe succeeds; a synced, healthy daemon sends nothing.
func TestAPIServerWatchProbesOnlyWhenDue(t *testing.T) {
	a := NewAPIServer("https://x", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	synced := false
	fail := true
	probes := make(chan bool, 100)
	reports := make(chan error, 100)
	step, entered := make(chan struct{}), make(chan struct{})
	go a.Watch(ctx, time.Millisecond, func() bool { entered <- struct{}{}; <-step; return synced }, func(context.Context) error {
		probes <- true
		if fail {
			return errors.New("down")
		}
		return nil
	}, func(err error, _ bool) { reports <- err })

	<-entered            // the first turn waits for its step
	tick := func() int { // one whole loop turn; the number of probes it sent
		step <- struct{}{}
		<-entered // the next turn began: this one's probe, if any, is done
		n := len(probes)
		for range n {
			<-probes
		}
		return n
	}
	if n := tick(); n != 1 {
		t.Fatalf("not synced: %d probes, want 1", n)
	}
	if err := <-reports; err == nil {
		t.Fatal("report lost the error")
	}
	fail = false
	synced = true
	if n := tick(); n != 1 { // the last probe failed: probe again
		t.Fatalf("after a failure: %d probes, want 1", n)
	}
	if n := tick(); n != 0 {
		t.Fatalf("synced and healthy: %d probes, want 0", n)
	}
	a.Suspect()
	if n := tick(); n != 1 {
		t.Fatalf("after a watch error: %d probes, want 1", n)
	}
	if n := tick(); n != 0 {
		t.Fatalf("suspicion cleared: %d probes, want 0", n)
	}
}

package loadgen

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// listen starts serve on a loopback port and returns its address.
func listen(t *testing.T, serve func(net.Listener) error) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() { _ = serve(l) }()
	return l.Addr().String()
}

// TestRunAgainstLoopback: each mode against the real servers on loopback completes
// requests (or bytes) without errors, and its percentiles are ordered.
func TestRunAgainstLoopback(t *testing.T) {
	web := listen(t, func(l net.Listener) error { return ServeHTTP(l, "pod") })
	sink := listen(t, ServeSink)
	o := Options{Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond, Workers: 2}
	for _, mode := range []string{"short", "keepalive", "stream"} {
		t.Run(mode, func(t *testing.T) {
			o := o
			o.Target = web
			if mode == "stream" {
				o.Target = sink
			}
			r, err := Run(context.Background(), mode, o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Errors != 0 {
				t.Errorf("%d errors: %+v", r.Errors, r)
			}
			if mode == "stream" {
				if r.Bytes == 0 || r.Mbps <= 0 {
					t.Errorf("nothing streamed: %+v", r)
				}
				return
			}
			if r.Requests == 0 || r.RPS <= 0 || r.Latency.P50 <= 0 || r.Latency.P50 > r.Latency.P99 || r.Latency.P99 > r.Latency.P999 {
				t.Errorf("requests: %+v", r)
			}
			if (mode == "short") != (r.Connect.P50 > 0) {
				t.Errorf("connect times only for short: %+v", r.Connect)
			}
		})
	}
}

// TestRunCountsFailures: a closed port and a server that answers 500 are errors, not
// requests.
func TestRunCountsFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	broken := listen(t, func(l net.Listener) error {
		return http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	})
	o := Options{Duration: 100 * time.Millisecond, Workers: 1}
	for _, tc := range []struct{ mode, target string }{{"short", closed}, {"short", broken}, {"keepalive", broken}, {"stream", closed}} {
		o.Target = tc.target
		r, err := Run(context.Background(), tc.mode, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Errors == 0 || r.Requests != 0 || r.Bytes != 0 {
			t.Errorf("%s to %s: %+v", tc.mode, tc.target, r)
		}
	}
	if _, err := Run(context.Background(), "udp", o); err == nil {
		t.Error("an unknown mode ran")
	}
}

// TestRunSpreadsTargets: with several targets each worker takes its own, in turn, so
// a baseline through a Service's pods loads every pod: two workers over a working and
// a closed port both succeed and fail.
func TestRunSpreadsTargets(t *testing.T) {
	web := listen(t, func(l net.Listener) error { return ServeHTTP(l, "pod") })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	for _, mode := range []string{"short", "keepalive"} {
		r, err := Run(context.Background(), mode, Options{Target: web + "," + closed, Duration: 200 * time.Millisecond, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if r.Requests == 0 || r.Errors == 0 {
			t.Errorf("%s over %s,%s: want requests on the first and errors on the second: %+v", mode, web, closed, r)
		}
	}
}

package loadgen

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := time.Millisecond
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * ms // 1..100 ms
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"none", nil, 0.5, 0},
		{"one", []time.Duration{7 * ms}, 0.999, 7 * ms},
		{"median of 100 is the 50th", hundred, 0.5, 50 * ms},
		{"p99 of 100 is the 99th", hundred, 0.99, 99 * ms},
		{"p99.9 of 100 is the largest", hundred, 0.999, 100 * ms},
		{"median of two is the lower", []time.Duration{ms, 3 * ms}, 0.5, ms},
		{"a tiny q is the smallest", hundred, 0.0001, ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.sorted, tc.q); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSummarizeSortsAndMerges(t *testing.T) {
	ms := time.Millisecond
	ws := []samples{
		{connect: []time.Duration{3 * ms, ms}, latency: []time.Duration{30 * ms, 10 * ms}, requests: 2, errors: 1},
		{connect: []time.Duration{2 * ms}, latency: []time.Duration{20 * ms}, requests: 1, bytes: 1_000_000},
	}
	r := merge(Result{Mode: "short"}, 2*time.Second, ws)
	if r.Requests != 3 || r.Errors != 1 || r.RPS != 1.5 || r.Seconds != 2 {
		t.Errorf("counts: %+v", r)
	}
	if r.Connect.P50 != 2 || r.Connect.P99 != 3 || r.Latency.P50 != 20 || r.Latency.P999 != 30 {
		t.Errorf("percentiles: connect %+v latency %+v", r.Connect, r.Latency)
	}
	if r.Bytes != 1_000_000 || r.Mbps != 4 { // 8 Mbit over 2 s
		t.Errorf("stream: %d bytes, %v Mbit/s", r.Bytes, r.Mbps)
	}
}

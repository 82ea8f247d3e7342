// Package loadgen is the data-plane benchmark's load generator and the servers it loads
// (`make bench-dataplane`). It runs inside the node VM as subcommands of the agent: the
// servers in the pods' network namespaces, the generator in a client's or a pod's.
package loadgen

import (
	"math"
	"slices"
	"time"
)

// Percentiles are latencies in milliseconds.
type Percentiles struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

// Result is one measured run: what a mode did against a target, after its warm-up.
type Result struct {
	Mode     string  `json:"mode"`
	Target   string  `json:"target"`
	Seconds  float64 `json:"seconds"`
	Workers  int     `json:"workers"`
	Requests int     `json:"requests"` // completed requests (short, keepalive)
	Errors   int     `json:"errors"`   // failed connects, requests or streams
	// RPS is completed requests per second of the measured time.
	RPS float64 `json:"rps"`
	// Connect is the TCP handshake's time (short: every request; keepalive: unused).
	Connect Percentiles `json:"connect_ms"`
	// Latency is a whole request's time: connect, request, response (short), or
	// request and response on an open connection (keepalive).
	Latency Percentiles `json:"latency_ms"`
	// Bytes the server acknowledged receiving (stream), and that as Mbit/s.
	Bytes int64   `json:"bytes"`
	Mbps  float64 `json:"mbps"`
}

// Percentile is the nearest-rank q-quantile (0 < q <= 1) of sorted samples: the
// smallest sample with at least q of all samples at or below it; 0 with no samples.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Summarize sorts samples in place and returns their p50, p99 and p99.9.
func Summarize(samples []time.Duration) Percentiles {
	slices.Sort(samples)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return Percentiles{P50: ms(Percentile(samples, 0.5)), P99: ms(Percentile(samples, 0.99)), P999: ms(Percentile(samples, 0.999))}
}

// samples is what one worker measured.
type samples struct {
	connect, latency []time.Duration
	requests, errors int
	bytes            int64
}

// merge adds the workers' samples into one Result over the measured time.
func merge(r Result, measured time.Duration, ws []samples) Result {
	var all samples
	for _, w := range ws {
		all.connect = append(all.connect, w.connect...)
		all.latency = append(all.latency, w.latency...)
		all.requests += w.requests
		all.errors += w.errors
		all.bytes += w.bytes
	}
	r.Seconds = measured.Seconds()
	r.Requests, r.Errors, r.Bytes = all.requests, all.errors, all.bytes
	if r.Seconds > 0 {
		r.RPS = float64(all.requests) / r.Seconds
		r.Mbps = float64(all.bytes) * 8 / 1e6 / r.Seconds
	}
	r.Connect, r.Latency = Summarize(all.connect), Summarize(all.latency)
	return r
}

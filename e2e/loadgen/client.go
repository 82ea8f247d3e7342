package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options say what to load and for how long.
type Options struct {
	// Target is HOST:PORT: a ClusterIP, a NodePort on a node address, a pod; or several,
	// comma-separated, which the workers take in turn (worker i the i-th, modulo): the
	// pods of a Service loaded directly, as a baseline without the proxy.
	Target string
	// Warmup runs first and is not measured; Duration is measured.
	Warmup, Duration time.Duration
	// Workers each keep one request (or stream) in flight.
	Workers int
}

// dialTimeout bounds one connect: a SYN the data path dropped is retransmitted after
// 1 s, so a failed handshake shows as a > 1 s connect, and one lost for good as an error.
const dialTimeout = 3 * time.Second

// Run runs mode ("short", "keepalive" or "stream") against o.Target.
func Run(ctx context.Context, mode string, o Options) (Result, error) {
	if o.Workers < 1 {
		o.Workers = 1
	}
	targets := strings.Split(o.Target, ",")
	target := func(worker int) string { return targets[worker%len(targets)] }
	var one func(ctx context.Context, worker int, s *samples, stop time.Time)
	switch mode {
	case "short":
		one = func(ctx context.Context, worker int, s *samples, stop time.Time) {
			shortLoop(ctx, target(worker), s, stop)
		}
	case "keepalive":
		c := &http.Client{Timeout: dialTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: o.Workers,
			DialContext: (&net.Dialer{Timeout: dialTimeout}).DialContext, DisableCompression: true}}
		defer c.CloseIdleConnections()
		one = func(ctx context.Context, worker int, s *samples, stop time.Time) {
			keepAliveLoop(ctx, c, "http://"+target(worker)+"/", s, stop)
		}
	case "stream":
		one = func(ctx context.Context, worker int, s *samples, stop time.Time) {
			stream(ctx, target(worker), s, stop)
		}
	default:
		return Result{}, fmt.Errorf("mode %q: want short, keepalive or stream", mode)
	}
	phase(ctx, o.Workers, o.Warmup, one)
	start := time.Now()
	ws := phase(ctx, o.Workers, o.Duration, one)
	return merge(Result{Mode: mode, Target: o.Target, Workers: o.Workers}, time.Since(start), ws), nil
}

// phase runs workers copies of one for d and returns what each measured.
func phase(ctx context.Context, workers int, d time.Duration, one func(context.Context, int, *samples, time.Time)) []samples {
	ws := make([]samples, workers)
	if d <= 0 {
		return ws
	}
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(ctx, i, &ws[i], stop)
		}()
	}
	wg.Wait()
	return ws
}

// shortLoop makes one TCP connection per request, as a client without connection reuse
// does: connect, send an HTTP/1.1 request with Connection: close, read to the server's
// close.
func shortLoop(ctx context.Context, target string, s *samples, stop time.Time) {
	d := net.Dialer{Timeout: dialTimeout}
	req := []byte("GET / HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
	for time.Now().Before(stop) && ctx.Err() == nil {
		t0 := time.Now()
		c, err := d.DialContext(ctx, "tcp", target)
		if err != nil {
			failed(s)
			continue
		}
		connected := time.Now()
		_ = c.SetDeadline(t0.Add(2 * dialTimeout))
		_, err = c.Write(req)
		if err == nil {
			err = readOK(c)
		}
		_ = c.Close()
		if err != nil {
			failed(s)
			continue
		}
		s.requests++
		s.connect = append(s.connect, connected.Sub(t0))
		s.latency = append(s.latency, time.Since(t0))
	}
}

// readOK reads a whole response to EOF and checks its status line.
func readOK(r io.Reader) error {
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "HTTP/1.1 200") {
		return fmt.Errorf("status %q", strings.TrimSpace(line))
	}
	_, err = io.Copy(io.Discard, br)
	return err
}

// keepAliveLoop sends requests one after another on a kept-alive connection.
func keepAliveLoop(ctx context.Context, c *http.Client, url string, s *samples, stop time.Time) {
	for time.Now().Before(stop) && ctx.Err() == nil {
		t0 := time.Now()
		resp, err := c.Get(url)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		if err != nil {
			failed(s)
			continue
		}
		s.requests++
		s.latency = append(s.latency, time.Since(t0))
	}
}

// failed counts a failed request and pauses a moment, so a refusing target is not
// hammered in a busy loop that would starve the rest of the VM.
func failed(s *samples) {
	s.errors++
	time.Sleep(10 * time.Millisecond)
}

// stream sends bytes on one connection to a sink until stop, then half-closes and counts
// what the sink says it received.
func stream(ctx context.Context, target string, s *samples, stop time.Time) {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		s.errors++
		return
	}
	defer c.Close()
	buf := make([]byte, 64<<10)
	_ = c.SetWriteDeadline(stop)
	for time.Now().Before(stop) && ctx.Err() == nil {
		if _, err := c.Write(buf); err != nil {
			break // the deadline, or the connection failed; the sink's count says which
		}
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	n, perr := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil || perr != nil {
		s.errors++
		return
	}
	s.bytes += n
}

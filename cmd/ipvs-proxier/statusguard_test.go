package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/sync/health"
	"github.com/ipvs-proxier/ipvs-proxier/sync/pressure"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// serveStatus serves body as /status and returns the address for --address.
func serveStatus(t *testing.T, body func(w io.Writer)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { body(w) }))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestStatusRefusesAnOversizedBody: status reads at most maxStatusBytes of /status and
// fails past it, holding no more than that, whatever the server sends.
func TestStatusRefusesAnOversizedBody(t *testing.T) {
	addr := serveStatus(t, func(w io.Writer) {
		var r statusReport
		r.Sync.LastError = strings.Repeat("x", maxStatusBytes)
		_ = json.NewEncoder(w).Encode(r)
	})
	var out bytes.Buffer
	err := runStatus([]string{"--address", addr}, &out)
	if err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Errorf("a /status of %d MiB: %v, want it refused", maxStatusBytes>>20, err)
	}
	// An endless body: read up to the limit and a byte, no further.
	endless := &countingReader{}
	if _, err := readStatus(endless, 1000); err == nil || endless.n > 1001 {
		t.Errorf("endless body: %v after %d bytes, want an error after 1001", err, endless.n)
	}
}

// countingReader is an endless stream of 'x' that counts what was read.
type countingReader struct{ n int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	c.n += int64(len(p))
	return len(p), nil
}

// TestStatusEscapesServerText: every string the server sends is printed with control
// and format characters escaped, in the summary and with --json: none starts a line,
// moves the cursor or sets the terminal's title.
func TestStatusEscapesServerText(t *testing.T) {
	const forged = "\nFORGED sync: healthy, ready\r\x1b[2J\x1b]0;title\x07\u202e\u0085\t"
	var r statusReport
	r.Node, r.Version, r.RulesBackend = "node"+forged, "v1"+forged, "iptables"+forged
	r.Sync.Ready, r.Sync.Healthy = false, true
	r.Sync.NotReady = "reason" + forged
	r.Sync.LastError, r.Sync.LastErrorLines = "first"+forged, 3
	r.APIServer = health.APIServerState{Server: "https://10.96.0.1:443" + forged, Error: "err" + forged}
	r.Conntrack.Err = "ct" + forged
	r.SetupProblems = []string{"setup" + forged}
	r.TopVirtualServers = []topVS{{Service: "ns/svc" + forged, VirtualServer: "TCP 10.96.1.1:80" + forged, Connections: 1}}
	addr := serveStatus(t, func(w io.Writer) { _ = json.NewEncoder(w).Encode(r) })
	for _, args := range [][]string{{}, {"--json"}} {
		var out bytes.Buffer
		if err := runStatus(append([]string{"--address", addr}, args...), &out); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for i, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "FORGED") {
				t.Errorf("%v: line %d is the server's: %q", args, i, l)
			}
			for _, c := range l {
				if c < 0x20 || c == 0x7f || c >= 0x80 && c < 0xa0 || c == '\u202e' {
					t.Errorf("%v: line %d holds %U: %q", args, i, c, l)
					break
				}
			}
		}
		if len(args) == 0 {
			for _, want := range []string{`NOT READY (reason\nFORGED sync: healthy, ready\r\x1b[2J\x1b]0;title\a\u202e\u0085\t)`,
				"last error: first (and 2 more;", `setup:      setup\nFORGED`} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("summary lacks %s:\n%s", want, out.String())
				}
			}
		} else {
			var back statusReport
			if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.Node != r.Node {
				t.Errorf("--json is not the same JSON: %v, node %q", err, back.Node)
			}
		}
	}
}

// TestStatusAgreesWithReadyz: whatever makes /readyz answer 503 (no successful sync
// yet, the API server unreachable, node setup incomplete), status says not ready, and
// why, from the daemon's own /status and /readyz built from the same facts.
func TestStatusAgreesWithReadyz(t *testing.T) {
	for _, tt := range []struct {
		name        string
		synced      bool
		unreachable bool
		setup       []string
		reason      string
	}{
		{name: "ready", synced: true},
		{name: "first sync pending", reason: "waiting for the first successful sync"},
		{name: "API server unreachable", synced: true, unreachable: true, reason: "the API server is unreachable"},
		{name: "setup incomplete", synced: true, setup: []string{"net.ipv4.vs.conntrack: read-only file system"}, reason: "node setup incomplete"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proxy := health.NewProxy(time.Minute, nil)
			if tt.synced {
				proxy.Updated()
			}
			api := health.NewAPIServer("https://10.96.0.1:443", nil)
			if tt.unreachable {
				api.Probed(errors.New("dial tcp 10.96.0.1:443: i/o timeout"))
			}
			hs := &health.Server{Proxy: proxy, APIServer: api, SetupIncomplete: len(tt.setup) > 0}
			syncer := reconcile.NewSyncer(reconcile.Options{}, kernel.NewFake().Kernel(), source.NewStaticSource(), source.NewTracker(nil))
			monitor := pressure.New(func() (kernel.ConntrackStats, error) { return kernel.ConntrackStats{Max: 1}, nil }, 0.9, nil, nil, nil)
			status := statusSources{node: "n", syncer: syncer, proxy: proxy, ready: hs.Readiness, monitor: monitor,
				hc: health.NewServices(nil, nil), api: api, setup: tt.setup}.report
			metricsSrv := httptest.NewServer(health.StatusHandler(status))
			defer metricsSrv.Close()

			rec := httptest.NewRecorder()
			hs.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
			readyz := rec.Code == http.StatusOK
			var out bytes.Buffer
			if err := runStatus([]string{"--address", strings.TrimPrefix(metricsSrv.URL, "http://")}, &out); err != nil {
				t.Fatal(err)
			}
			says := !strings.Contains(out.String(), "NOT READY")
			if says != readyz || readyz != (tt.reason == "") || !readyz && !strings.Contains(out.String(), "NOT READY ("+tt.reason+")") {
				t.Errorf("/readyz %d, status says:\n%s\nwant ready=%v (%s)", rec.Code, out.String(), tt.reason == "", tt.reason)
			}
			for _, p := range tt.setup {
				if !strings.Contains(out.String(), "setup:      "+p) {
					t.Errorf("status does not name the setup problem %q:\n%s", p, out.String())
				}
			}
		})
	}
}

// TestFirstLines: /status carries the last sync error's first lines up to a bound, and
// how many there were.
func TestFirstLines(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		limit    int
		want     string
		lines    int
	}{
		{"empty", "", 10, "", 0},
		{"fits", "a\nb", 10, "a\nb", 2},
		{"cut at a line", "aaaa\nbbbb\ncccc", 10, "aaaa\nbbbb", 3},
		{"one long line", "ééééé", 5, "éé", 1},
	} {
		got, lines := firstLines(tt.in, tt.limit)
		if got != tt.want || lines != tt.lines {
			t.Errorf("%s: %q, %d; want %q, %d", tt.name, got, lines, tt.want, tt.lines)
		}
	}
}

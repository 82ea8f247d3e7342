package pressure

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics/metricstest"
)

type recordedEvent struct{ typ, reason, msg string }

type events struct{ got []recordedEvent }

func (e *events) NodeEvent(t, r, m string) { e.got = append(e.got, recordedEvent{t, r, m}) }

// harness drives a Monitor over a fake kernel with a settable clock.
type harness struct {
	fake   *kernel.Fake
	now    time.Time
	events *events
	logs   *observer.ObservedLogs
	m      *Monitor
}

func newHarness(threshold float64) *harness {
	core, logs := observer.New(zap.InfoLevel)
	h := &harness{fake: kernel.NewFake(), now: time.Unix(1000, 0), events: &events{}, logs: logs}
	h.m = New(h.fake.Stats, threshold, zap.New(core), h.events, func() time.Time { return h.now })
	return h
}

func (h *harness) sample(s kernel.ConntrackStats) State {
	h.fake.SetStats(s)
	h.now = h.now.Add(10 * time.Second)
	return h.m.Sample()
}

func (h *harness) warnings() int { return h.logs.FilterMessage("Conntrack table under pressure").Len() }

func TestPressureThreshold(t *testing.T) {
	tests := []struct {
		name     string
		samples  []kernel.ConntrackStats
		pressure []bool
		reasons  []string
	}{
		{
			name:     "under the threshold",
			samples:  []kernel.ConntrackStats{{Entries: 100, Max: 1000}, {Entries: 799, Max: 1000}},
			pressure: []bool{false, false},
		},
		{
			name:     "crosses the threshold and falls back",
			samples:  []kernel.ConntrackStats{{Entries: 100, Max: 1000}, {Entries: 800, Max: 1000}, {Entries: 950, Max: 1000}, {Entries: 700, Max: 1000}},
			pressure: []bool{false, true, true, false},
			reasons:  []string{ReasonPressure, ReasonResolved},
		},
		{
			name:     "already full at the first sample",
			samples:  []kernel.ConntrackStats{{Entries: 1000, Max: 1000}},
			pressure: []bool{true},
			reasons:  []string{ReasonPressure},
		},
		{
			name: "drops under the threshold start pressure, a quiet interval ends it",
			samples: []kernel.ConntrackStats{{Entries: 10, Max: 1000, Drop: 5}, {Entries: 10, Max: 1000, Drop: 9},
				{Entries: 10, Max: 1000, Drop: 9}},
			pressure: []bool{false, true, false},
			reasons:  []string{ReasonPressure, ReasonResolved},
		},
		{
			name:     "early_drop rise",
			samples:  []kernel.ConntrackStats{{Max: 1000}, {Max: 1000, EarlyDrop: 1}},
			pressure: []bool{false, true},
			reasons:  []string{ReasonPressure},
		},
		{
			name:     "insert_failed rise",
			samples:  []kernel.ConntrackStats{{Max: 1000, InsertFailed: 3}, {Max: 1000, InsertFailed: 4}},
			pressure: []bool{false, true},
			reasons:  []string{ReasonPressure},
		},
		{
			name:     "counters since boot alone are not pressure",
			samples:  []kernel.ConntrackStats{{Max: 1000, Drop: 100, EarlyDrop: 100, InsertFailed: 100}},
			pressure: []bool{false},
		},
		{
			name:     "a counter going down (a CPU offline) is not a rise",
			samples:  []kernel.ConntrackStats{{Max: 1000, Drop: 100}, {Max: 1000, Drop: 50}},
			pressure: []bool{false, false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(0.8)
			for i, s := range tt.samples {
				if got := h.sample(s).Pressure; got != tt.pressure[i] {
					t.Errorf("sample %d %+v: pressure %v, want %v", i, s, got, tt.pressure[i])
				}
			}
			var reasons []string
			for _, e := range h.events.got {
				reasons = append(reasons, e.reason)
				wantType := "Warning"
				if e.reason == ReasonResolved {
					wantType = "Normal"
				}
				if e.typ != wantType {
					t.Errorf("event %s has type %s", e.reason, e.typ)
				}
			}
			if strings.Join(reasons, ",") != strings.Join(tt.reasons, ",") {
				t.Errorf("events %v, want %v", reasons, tt.reasons)
			}
		})
	}
}

func TestPressureMessageNamesTheFix(t *testing.T) {
	h := newHarness(0.8)
	st := h.sample(kernel.ConntrackStats{Entries: 900, Max: 1000})
	if st.Suggest != 2048 {
		t.Errorf("suggested max %d, want 2048 (next power of two over 2 x 1000)", st.Suggest)
	}
	if len(h.events.got) != 1 {
		t.Fatalf("events %v", h.events.got)
	}
	msg := h.events.got[0].msg
	for _, want := range []string{"900 of 1000", "90%", "net.netfilter.nf_conntrack_max", "=2048"} {
		if !strings.Contains(msg, want) {
			t.Errorf("event message %q lacks %q", msg, want)
		}
	}
	entry := h.logs.FilterMessage("Conntrack table under pressure").All()[0]
	fields := entry.ContextMap()
	if fields["entries"] != uint64(900) || fields["max"] != uint64(1000) || fields["percent"] != "90.0" {
		t.Errorf("log fields %v", fields)
	}
}

func TestPressureWarningIsRateLimited(t *testing.T) {
	h := newHarness(0.8)
	for range 5 { // 5 samples, 10 s apart: one warning at the start only
		h.sample(kernel.ConntrackStats{Entries: 900, Max: 1000})
	}
	if n := h.warnings(); n != 1 {
		t.Errorf("%d warnings in 50 s, want 1", n)
	}
	for range 6 { // another 60 s: one more reminder
		h.sample(kernel.ConntrackStats{Entries: 900, Max: 1000})
	}
	if n := h.warnings(); n != 2 {
		t.Errorf("%d warnings after 110 s, want 2", n)
	}
	if n := len(h.events.got); n != 1 {
		t.Errorf("%d events for one episode, want 1", n)
	}
}

func TestPressureMetrics(t *testing.T) {
	h := newHarness(0.5)
	reg := prometheus.NewRegistry()
	reg.MustRegister(h.m)
	h.sample(kernel.ConntrackStats{Entries: 600, Max: 1000, Drop: 1, EarlyDrop: 2, InsertFailed: 3})
	fams, err := metricstest.Scrape(reg)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"ipvs_proxier_conntrack_entries": 600, "ipvs_proxier_conntrack_max": 1000, "ipvs_proxier_conntrack_usage_ratio": 0.6,
		"ipvs_proxier_conntrack_pressure": 1, "ipvs_proxier_conntrack_drop_total": 1, "ipvs_proxier_conntrack_early_drop_total": 2,
		"ipvs_proxier_conntrack_insert_failed_total": 3,
	} {
		if got, ok := fams.Value(name, nil); !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
}

func TestPressureStatsError(t *testing.T) {
	h := newHarness(0.8)
	h.sample(kernel.ConntrackStats{Entries: 900, Max: 1000})
	h.m.stats = func() (kernel.ConntrackStats, error) { return kernel.ConntrackStats{}, kernel.ErrInjected }
	st := h.m.Sample()
	if st.Err == "" || !st.Pressure {
		t.Errorf("after a failed read: %+v; want the error recorded and the last known pressure kept", st)
	}
}

// Package pressure watches the conntrack table. A full table drops new flows silently
// (the kernel logs "nf_conntrack: table full, dropping packet" and nothing else), so the
// monitor samples the table's global and per-CPU counters every interval, with one
// ctnetlink stats query and never a table dump, and makes pressure loud: a rate-limited
// Warning log naming the sysctl to raise, Node Events at its start and end, metrics, and
// /status.
package pressure

import (
	"context"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Event reasons on the Node.
const (
	ReasonPressure = "ConntrackTablePressure"
	ReasonResolved = "ConntrackTablePressureResolved"
)

// NodeEvents publishes Events on this node's Node object.
type NodeEvents interface {
	NodeEvent(eventType, reason, message string)
}

// State is the last sample and what it meant.
type State struct {
	Entries, Max                  uint64
	Usage                         float64
	Drop, EarlyDrop, InsertFailed uint64
	// Pressure is true while usage is at or over the threshold, or while the drop,
	// early_drop or insert_failed counters rise.
	Pressure bool
	// Since is when the current pressure started.
	Since time.Time
	// Suggest is the nf_conntrack_max to raise to, while under pressure.
	Suggest uint64
	Sampled time.Time
	Err     string
}

// Monitor samples conntrack statistics. It is safe for concurrent use.
type Monitor struct {
	stats     func() (kernel.ConntrackStats, error)
	threshold float64
	log       *zap.Logger
	events    NodeEvents
	now       func() time.Time
	// warnEvery rate-limits the Warning log while pressure lasts.
	warnEvery time.Duration

	mu       sync.Mutex
	state    State
	sampled  bool
	lastWarn time.Time
}

// New returns a monitor. events may be nil; now may be nil for time.Now.
func New(stats func() (kernel.ConntrackStats, error), threshold float64, log *zap.Logger, events NodeEvents, now func() time.Time) *Monitor {
	if log == nil {
		log = zap.NewNop()
	}
	if now == nil {
		now = time.Now
	}
	return &Monitor{stats: stats, threshold: threshold, log: log, events: events, now: now, warnEvery: time.Minute}
}

// Run samples every interval until ctx is done.
func (m *Monitor) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	m.Sample()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Sample()
		}
	}
}

// State returns the last sample.
func (m *Monitor) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// Sample reads the counters once and updates the state, logs and Events.
func (m *Monitor) Sample() State {
	s, err := m.stats()
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	prev, first := m.state, !m.sampled
	if err != nil {
		m.state.Err, m.state.Sampled = err.Error(), now
		m.log.Warn("Cannot read conntrack statistics", zap.Error(err))
		return m.state
	}
	m.sampled = true
	cur := State{Entries: s.Entries, Max: s.Max, Drop: s.Drop, EarlyDrop: s.EarlyDrop, InsertFailed: s.InsertFailed, Sampled: now}
	if s.Max > 0 {
		cur.Usage = float64(s.Entries) / float64(s.Max)
	}
	// The counters are per-CPU sums since boot; a rise since the last sample means the
	// kernel dropped or failed to track flows in this interval.
	rose := !first && (s.Drop > prev.Drop || s.EarlyDrop > prev.EarlyDrop || s.InsertFailed > prev.InsertFailed)
	cur.Pressure = s.Max > 0 && cur.Usage >= m.threshold || rose
	if cur.Pressure {
		cur.Since = prev.Since
		if !prev.Pressure {
			cur.Since = now
		}
		cur.Suggest = suggestMax(s.Entries, s.Max)
	}
	m.state = cur
	switch {
	case cur.Pressure && !prev.Pressure:
		msg := m.message(cur, prev)
		m.log.Warn("Conntrack table under pressure", m.fields(cur)...)
		m.lastWarn = now
		if m.events != nil {
			m.events.NodeEvent("Warning", ReasonPressure, msg)
		}
	case cur.Pressure && now.Sub(m.lastWarn) >= m.warnEvery:
		m.log.Warn("Conntrack table under pressure", m.fields(cur)...)
		m.lastWarn = now
	case !cur.Pressure && prev.Pressure:
		m.log.Info("Conntrack table pressure ended", zap.Uint64("entries", s.Entries), zap.Uint64("max", s.Max))
		if m.events != nil {
			m.events.NodeEvent("Normal", ReasonResolved, fmt.Sprintf("conntrack table at %d of %d entries (%.0f%%), under the %.0f%% threshold",
				s.Entries, s.Max, 100*cur.Usage, 100*m.threshold))
		}
	}
	return cur
}

func (m *Monitor) fields(s State) []zap.Field {
	return []zap.Field{zap.Uint64("entries", s.Entries), zap.Uint64("max", s.Max), zap.String("percent", fmt.Sprintf("%.1f", 100*s.Usage)),
		zap.Uint64("drop", s.Drop), zap.Uint64("earlyDrop", s.EarlyDrop), zap.Uint64("insertFailed", s.InsertFailed),
		zap.String("fix", fix(s))}
}

func (m *Monitor) message(cur, prev State) string {
	why := fmt.Sprintf("%.0f%% full, at or over the %.0f%% threshold", 100*cur.Usage, 100*m.threshold)
	if cur.Usage < m.threshold {
		why = fmt.Sprintf("drop +%d, early_drop +%d, insert_failed +%d since the last sample",
			rise(cur.Drop, prev.Drop), rise(cur.EarlyDrop, prev.EarlyDrop), rise(cur.InsertFailed, prev.InsertFailed))
	}
	return fmt.Sprintf("conntrack table at %d of %d entries (%s); %s", cur.Entries, cur.Max, why, fix(cur))
}

// fix says which sysctl to raise. The hash table does not grow with nf_conntrack_max, so
// nf_conntrack_buckets is named too, at a quarter of it (kube-proxy's hashsize ratio).
func fix(s State) string {
	return fmt.Sprintf("raise net.netfilter.nf_conntrack_max to %d (sysctl -w net.netfilter.nf_conntrack_max=%d, or --conntrack-max-per-core), "+
		"and net.netfilter.nf_conntrack_buckets to %d", s.Suggest, s.Suggest, max(s.Suggest/4, 1))
}

// suggestMax proposes the next power of two at least twice the larger of entries and max.
func suggestMax(entries, max_ uint64) uint64 {
	want := 2 * max(entries, max_, 1)
	return 1 << bits.Len64(want-1)
}

// rise is cur-prev, or 0 when the counter went down (a CPU went offline).
func rise(cur, prev uint64) uint64 {
	if cur < prev {
		return 0
	}
	return cur - prev
}

package reconcile

import (
	"errors"
	"net/netip"
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/addrs"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/ipvs"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/rules"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/sets"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// Options configure a Syncer.
type Options struct {
	// Config is the translation config. NodeIPs and Zone, when empty, are filled from
	// LocalAddresses and the Node object at each full sync.
	Config proxier.Config
	// SyncPeriod is the longest time between two full syncs.
	SyncPeriod time.Duration
	// GracefulTimeout bounds how long a removed TCP/SCTP real server drains at weight 0.
	GracefulTimeout time.Duration
	// ExcludeCIDRs: virtual servers there are never pruned (--ipvs-exclude-cidrs).
	ExcludeCIDRs []netip.Prefix
	// BackgroundFull runs the periodic full sync on a goroutine of its own, so that the
	// partial syncs go on while it reads the kernel (read.go); Wake, if set, is called
	// when it failed, for the next sync to retry soon. Off, every full sync runs inside
	// Sync (the tests' deterministic mode; the first sync always does).
	BackgroundFull bool
	Wake           func()
	// CheckEvery spreads the deep checks over full syncs. Each full sync re-reads the
	// real servers of 1/CheckEvery of our virtual servers, and lists only the sets whose
	// member count differs from the desired one, every set on each CheckEvery-th. So
	// hand-made drift that keeps the counts is repaired within CheckEvery syncPeriods;
	// missing or changed virtual servers, and sets that gained or lost members, every
	// full sync (past dumpAllUpTo virtual servers, a changed one, or one missing outside
	// the rotation's tenth, within CheckEvery: lookup.go). 0 or 1 checks everything
	// every time.
	CheckEvery int
	// VSSeriesLimit is the metrics' --metrics-per-vs-limit: how many of the busiest
	// virtual servers the snapshot keeps with their counters (ipvs/stats.go); 0 keeps all.
	VSSeriesLimit int
	// NodePortMin and NodePortMax bound the ports of NodePort virtual servers we own on
	// node IPs; others on node IPs belong to someone else.
	NodePortMin, NodePortMax uint16
	// NodeOptions say how the node-derived fields of Config are found.
	source.NodeOptions
	Logger *zap.Logger
	Events EventSink
	// Observer is told what each sync did, for metrics; nil tells no one.
	Observer Observer
	// HealthChecks serves healthCheckNodePorts; nil serves none.
	HealthChecks HealthCheckSink
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Syncer computes desired state from a Source and applies it to a Kernel. Sync is its
// one entry point; it is safe to call from several goroutines (calls serialize), but
// the daemon calls it only from its Runner.
type Syncer struct {
	opts     Options
	k        kernel.Kernel
	src      source.Source
	tracker  *source.Tracker
	log      *zap.Logger
	problems *problemReporter
	// conflicts reports VirtualServerConflict on the losing Services, apart from the
	// translation's problems: a Service loses when another one is set.
	conflicts *problemReporter

	mu      syncLock
	cfg     proxier.Config
	desired *proxier.Desired
	// built is set once desired holds every Service.
	built bool
	// The reconcilers, each of one kind of kernel object: its state and its writes.
	ipvs  *ipvs.Reconciler  // virtual and real servers
	addrs *addrs.Reconciler // the dummy's addresses
	sets  *sets.Reconciler  // our sets, and ownership read from them
	rules *rules.Reconciler // our rules, and the UDP conntrack reconcile
	// The rest of the state, each part kept by the file that works on it.
	fullState    // schedule.go: when full syncs run, and which round
	lookupState  // lookup.go: dumps or lookups
	writeQueue   // apply.go: this apply's batched writes and the retries
	observeState // observe.go: status, latency triggers
	published    // snapshot.go: the snapshot readers read without the lock
	// refusals are the writes the kernel refused, this sync (refused.go).
	refusals *refusals
	// onAddrWait, for tests, runs when the addresses' flush waits for a background batch.
	onAddrWait func()
}

// Status describes the last sync, for health checks and metrics.
type Status struct {
	LastSync     time.Time
	LastSuccess  time.Time
	LastError    string
	LastFull     bool
	LastDuration time.Duration
	Syncs        int
}

// NewSyncer returns a syncer. The tracker must be the one the informer handlers feed.
func NewSyncer(opts Options, k kernel.Kernel, src source.Source, tracker *source.Tracker) *Syncer {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SyncPeriod == 0 {
		opts.SyncPeriod = 30 * time.Second
	}
	if opts.NodePortMin == 0 && opts.NodePortMax == 0 {
		opts.NodePortMin, opts.NodePortMax = 30000, 32767
	}
	opts.Config = opts.Config.WithDefaults()
	started := opts.Now()
	var observer Observer = noObserver{}
	if opts.Observer != nil {
		observer = opts.Observer
	}
	s := &Syncer{
		opts: opts, k: k, src: src, tracker: tracker, log: opts.Logger,
		problems:  newProblemReporter(opts.Logger, opts.Events),
		conflicts: newProblemReporter(opts.Logger, opts.Events),
		cfg:       opts.Config, desired: proxier.NewDesired(),
		fullState:   fullState{needFull: true},
		lookupState: lookupState{dumpAllUpTo: dumpAllUpTo, listUncountedUpTo: listUncountedUpTo},
		writeQueue:  writeQueue{retry: proxier.NewDelta()},
		observeState: observeState{observer: observer, started: started,
			latencies: latencies{since: started, seen: map[proxier.ServiceKey]time.Time{}}},
	}
	s.published.now = func() time.Time { return s.opts.Now() }
	s.refusals = newRefusals(observer, opts.Logger, opts.Events)
	s.ipvs = ipvs.New(ipvs.Config{
		IPVS: k.IPVS, Conntrack: k.Conntrack, Log: opts.Logger,
		Now:             func() time.Time { return s.opts.Now() },
		GracefulTimeout: opts.GracefulTimeout, CheckEvery: opts.CheckEvery, VSSeriesLimit: opts.VSSeriesLimit,
		Desired: func() *proxier.Desired { return s.desired },
		Owns:    s.owns,
		Failed: func(kind string, key kernel.VSKey, err error) bool {
			refused := s.refusals.isolated(err, refusedWrite{kind: kind, vs: key})
			s.retry.VirtualServers[key] = struct{}{}
			return refused
		},
		Yield: s.mu.yield,
	})
	s.addrs = addrs.New(addrs.Config{
		Addresses: k.Addresses, Log: opts.Logger,
		Device:  func() string { return s.cfg.DummyDevice },
		Now:     func() time.Time { return s.opts.Now() },
		Desired: func() *proxier.Desired { return s.desired },
		Failed: func(a netip.Addr, err error) bool {
			refused := s.refusals.isolated(err, refusedWrite{kind: "address", addr: a})
			s.retry.Addresses[a] = struct{}{}
			return refused
		},
		Wait: s.mu.waitReleased, Lock: s.mu.lockReleased,
		OnWait: func() {
			if s.onAddrWait != nil {
				s.onAddrWait()
			}
		},
	})
	s.sets = sets.New(sets.Config{
		Sets: k.Sets, Log: opts.Logger,
		Now:      func() time.Time { return s.opts.Now() },
		Families: func() []kernel.Family { return s.cfg.Families },
		Desired:  func() *proxier.Desired { return s.desired },
		Failed: func(m kernel.Member, err error) bool {
			refused := s.refusals.isolated(err, refusedWrite{kind: "set_member", member: m})
			s.retry.Members[m] = struct{}{}
			return refused
		},
		Wait: s.mu.waitReleased, Lock: s.mu.lockReleased,
	})
	s.rules = rules.New(rules.Config{
		Rules: k.Rules, Conntrack: k.Conntrack, Log: opts.Logger, SyncPeriod: opts.SyncPeriod,
		Now:           func() time.Time { return s.opts.Now() },
		Config:        func() *proxier.Config { return &s.cfg },
		Desired:       func() *proxier.Desired { return s.desired },
		Retry:         func() { s.retry.RulesChanged = true },
		NeedFull:      func() { s.needFull = true },
		RestoreFailed: func(f kernel.Family) { s.observer.IptablesRestoreFailed(f) },
		Reconciled: func(f kernel.Family, took time.Duration, deleted int) {
			s.observer.ConntrackReconciled(f, took, deleted)
		},
	})
	s.publish()
	return s
}

// DummyAddressesChanged is the address watch's report for the dummy interface: an
// address on it was added or removed, or the subscription began (watching) or ended
// (not watching). Safe from any goroutine.
func (s *Syncer) DummyAddressesChanged(watching bool) { s.addrs.DummyAddressesChanged(watching) }

// ErrNotSynced is returned by Sync while the informers have not synced; nothing is
// programmed or pruned until they have.
var ErrNotSynced = errors.New("informers not synced yet")

// Sync brings the kernel in step: a partial sync of the Services the tracker recorded,
// or a full one (kernel dump, diff, repair, prune) on the first call, after a Node
// change, after a failed kernel dump, and once per SyncPeriod. A failed write is
// retried by the next sync, object by object; the returned error makes the Runner
// schedule that sync early. (Re-dumping everything after any error would never finish
// when a few percent of netlink calls fail, so only what failed is redone.)
func (s *Syncer) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.src.HasSynced() {
		return ErrNotSynced
	}
	defer s.publish() // before the unlock
	start := s.opts.Now()
	keys, all := s.tracker.Drain()
	full := s.needFull || all || start.Sub(s.lastFull) >= s.opts.SyncPeriod
	if full && !s.fullRunning {
		s.fullWhy = s.whyFull(s.status.LastSuccess.IsZero(), all)
	}
	switch {
	case full && s.fullRunning:
		// A full sync reads the kernel meanwhile (read.go) and repairs what this one
		// would; one that began before a change to every Service is followed by another.
		s.fullAgain = s.fullAgain || all
		full = false
	case full && s.opts.BackgroundFull && !s.needFull && !all:
		s.fullRunning, s.fullBegan = true, start
		go s.backgroundFull()
		full = false
	}
	return s.run(start, keys, full)
}

// run is one sync, partial or full, begun at start for the changed Services keys, and
// what follows it: draining servers reaped, health checks applied, status and metrics
// recorded. Called with s.mu held.
func (s *Syncer) run(start time.Time, keys map[proxier.ServiceKey]struct{}, full bool) error {
	var err error
	ph := newPhases(s.opts.Now) // the step times, for the log line of a full or slow sync
	if full {
		err = s.syncFull(keys, ph)
	} else {
		err = s.syncPartial(keys, ph)
	}
	err = errors.Join(err, s.ipvs.Reap())
	s.refusals.report(s.desired)
	if hc := s.opts.HealthChecks; hc != nil {
		hc.Apply()
	}
	ph.mark("reapAndHealthChecks")
	end := s.opts.Now()
	s.observer.ObserveSync(full, end.Sub(start), err, end)
	s.status.LastSync, s.status.LastFull, s.status.LastDuration = end, full, end.Sub(start)
	s.status.Syncs++
	if err != nil {
		s.status.LastError = err.Error()
		s.log.Warn("Sync failed; retrying what failed early", zap.Bool("full", full), zap.Error(err))
		return err
	}
	first := s.status.LastSuccess.IsZero()
	s.status.LastSuccess, s.status.LastError = end, ""
	s.latencies.observe(s.observer, end)
	if full {
		s.logFullSync(first, end.Sub(start), ph)
	} else if took := end.Sub(start); took >= slowPartialSync {
		s.log.Info("Slow partial sync", append([]zap.Field{zap.Duration("took", took), zap.Int("services", len(keys))}, ph.fields...)...)
	}
	s.log.Debug("Synced", zap.Bool("full", full), zap.Int("services", len(keys)), zap.Duration("took", end.Sub(start)))
	return nil
}

// logFullSync says how long a full sync took and where the time went: at Info for the
// first success (the node is programmed) or a slow one, else at Debug.
func (s *Syncer) logFullSync(first bool, took time.Duration, ph *phases) {
	msg, level := "Full sync", zap.DebugLevel
	switch {
	case first:
		msg, level = "Node programmed (first sync)", zap.InfoLevel
	case took >= slowFullSync:
		msg, level = "Slow full sync", zap.InfoLevel
	}
	ce := s.log.Check(level, msg)
	if ce == nil {
		return
	}
	fields := []zap.Field{zap.Duration("took", took), zap.Duration("sinceStart", s.opts.Now().Sub(s.started)),
		zap.Int("services", s.desired.Len()), zap.Int("virtualServers", s.ipvs.Len()), zap.Int("realServers", s.ipvs.RealServerCount()),
		zap.String("why", s.fullWhy), zap.Bool("dumpedAll", s.dumpedAll), zap.Bool("dumpedAddresses", s.dumpedAddrs)}
	ce.Write(append(fields, ph.fields...)...)
}

// Desired returns the desired state. The caller must not modify it, and must not use it
// while a sync may run.
func (s *Syncer) Desired() *proxier.Desired {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.desired
}

// Config returns the translation config in force (with node fields filled in).
func (s *Syncer) Config() proxier.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// syncPartial programs the changed Services keys and the last sync's failed writes; ph
// times its steps.
func (s *Syncer) syncPartial(keys map[proxier.ServiceKey]struct{}, ph *phases) error {
	delta := s.retry
	s.retry = proxier.NewDelta()
	for k := range keys {
		s.updateService(k, delta)
	}
	ph.mark("translate")
	err := s.reconcileSets(false, nil)
	ph.mark("sets")
	return errors.Join(err, s.apply(delta, ph))
}

// updateService recomputes one Service into the desired state.
func (s *Syncer) updateService(k proxier.ServiceKey, delta *proxier.Delta) {
	s.updateServiceWith(k, s.translate(k), delta)
}

// updateServiceWith records one Service's translation t in the desired state.
func (s *Syncer) updateServiceWith(k proxier.ServiceKey, t translated, delta *proxier.Delta) {
	st := t.st
	s.problems.report(k, st.Problems)
	s.refusals.changed(k) // a refusal of its new state is reported anew
	if s.desired.Set(st, delta) {
		s.ipvs.RebuildStats() // a virtual server's owner may have changed
	}
	for _, c := range s.desired.TakeConflictChanges() {
		s.conflicts.report(c, s.desired.Conflicts(c))
	}
	taken := s.src.TakeTriggers(k) // taken even without an observer: the source keeps them until then
	if s.opts.Observer != nil {
		s.latencies.note(k, taken, t.slices)
	}
	if hc := s.opts.HealthChecks; hc != nil && delta != nil {
		hc.SetHealthCheck(k, st.HealthCheck)
	}
}

// nodeConfig fills the node-derived fields of the config (source.NodeConfig).
func (s *Syncer) nodeConfig() proxier.Config {
	cfg, err := source.NodeConfig(s.opts.Config, s.src.Node(), s.src.ServiceCIDRs(), s.opts.NodeOptions)
	if err != nil {
		s.log.Warn("Cannot list node addresses; using the Node object's", zap.Error(err))
	}
	return cfg
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/health"
	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
	"github.com/ipvs-proxier/ipvs-proxier/sync/pressure"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// runDaemon runs the proxy until SIGTERM or SIGINT. On exit the kernel state is left in
// place, so a restart (or an upgrade) never interrupts traffic.
func runDaemon(args []string) error {
	o, warnings, done, err := daemonOptions(args)
	if err != nil || done {
		return err
	}
	setGCPercent(gcPercentColdStart) // gc.go
	warnings = append(warnings, o.kubeProxyWarnings()...)
	log, err := newLogger(o.logLevel, o.logFormat, os.Stderr)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	logBanner(log)
	for _, w := range warnings {
		log.Warn("Settings ignored", zap.String("warning", w))
	}
	r, err := o.resolve(os.Hostname)
	if err != nil {
		return err
	}
	for _, w := range r.warnings {
		log.Warn("Setting has no effect", zap.String("warning", w))
	}
	log = log.With(zap.String("node", r.nodeName))

	restCfg, inCluster, err := restConfig(o)
	if err != nil {
		return err
	}
	if inCluster {
		warnInCluster(log, restCfg.Host)
	}
	client, err := kubeapi.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	lock, err := acquireLock(o.lockFile, lockWait)
	if err != nil {
		return err
	}
	defer lock.Close()
	k, ipvsHandle, setup, err := prepareNode(o, r, log)
	if err != nil {
		return err
	}
	defer ipvsHandle.Close()
	if o.kp.initOnly {
		// kube-proxy's --init-only: what needs full root (modules, sysctls) is done.
		log.Info("Node initialised (--init-only); exiting")
		return nil
	}
	runProxy(o, r, log, client, health.NewAPIServer(restCfg.Host, nil), k, setup)
	log.Info("Stopping; kernel state left in place")
	return nil
}

// daemonOptions parses the command line and the config file. done says the command is
// complete (--version, kube-proxy's --cleanup).
func daemonOptions(args []string) (o *options, warnings []string, done bool, err error) {
	o = newOptions("ipvs-proxier")
	o.fs.SetOutput(os.Stdout)
	o.fs.Usage = func() { daemonUsage(os.Stdout, o.fs) }
	if err := o.fs.Parse(args); err != nil {
		return nil, nil, false, err
	}
	if err := noArgs(o.fs); err != nil {
		return nil, nil, false, err
	}
	if o.kp.version {
		fmt.Println(version)
		return nil, nil, true, nil
	}
	if o.configFile != "" {
		if warnings, err = o.applyConfigFile(o.configFile); err != nil {
			return nil, nil, false, err
		}
	}
	// After --config, which drops a --oom-score-adj given beside it, as kube-proxy does.
	if err := o.validOOMScoreAdj(); err != nil {
		return nil, nil, false, err
	}
	if o.kp.cleanup {
		// kube-proxy's --cleanup removes what every proxy mode left.
		return nil, nil, true, runCleanup([]string{"--iptables-mode-leftovers", "--dummy-device", o.dummyDevice,
			"--ipvs-exclude-cidrs", strings.Join(o.excludeCIDRs, ",")}, os.Stdout)
	}
	return o, warnings, false, nil
}

// prepareNode checks that IPVS works and sets the node up as kube-proxy does at start:
// the dummy device, the sysctls, the IPVS timeouts and the OOM score. setup lists what
// this container could not set up (setupProblem).
func prepareNode(o *options, r *resolved, log *zap.Logger) (k kernel.Kernel, h *linux.IPVS, setup []string, err error) {
	report := linux.Preflight{Rules: r.backend.modules}.Check([]string{o.scheduler})
	if report.NoIPVS != "" {
		// Before any sysctl: on such a kernel they fail with a bare ENOENT.
		return kernel.Kernel{}, nil, nil, fmt.Errorf("IPVS is not usable on this node: %s (%s)", report.NoIPVS, report)
	}
	if !report.OK() {
		log.Warn(report.String())
	}
	if len(report.MissingModules) > 0 && !o.kp.initOnly {
		setup = append(setup, report.String())
	}
	k, ipvsHandle, err := linux.New(10*time.Second, r.backend.open)
	if a, ok := k.Addresses.(*linux.Addresses); ok {
		a.LocalRoutes = r.cfg.VIPLocalRoutes // as plan prints it (proxier.Desired.Plan)
	}
	if err == nil {
		_, err = k.IPVS.ListVirtualServers()
	}
	if err != nil {
		if ipvsHandle != nil {
			ipvsHandle.Close()
		}
		// The only fatal preflight failure: without IPVS there is nothing to do.
		return kernel.Kernel{}, nil, nil, fmt.Errorf("IPVS is not usable on this node: %w (%s)", err, report)
	}
	fail := func(err error) (kernel.Kernel, *linux.IPVS, []string, error) {
		ipvsHandle.Close()
		return kernel.Kernel{}, nil, nil, err
	}
	if err := k.Addresses.EnsureDummy(r.cfg.DummyDevice); errors.Is(err, kernel.ErrNotDummy) {
		return fail(err)
	}
	changes, err := linux.HostSysctls.Apply(linux.SysctlConfig{StrictARP: o.strictARP,
		ConntrackMaxPerCore: int(o.conntrackPerCore), ConntrackMin: int(o.conntrackMin), CPUs: runtime.NumCPU(),
		Conntrack: o.conntrack})
	for _, c := range changes {
		log.Info("Sysctl changed", zap.String("key", c.Key), zap.Int("old", c.Old), zap.Int("new", c.New))
	}
	problem, err := setupProblem(err, o.kp.initOnly)
	if err != nil {
		return fail(err)
	}
	if problem != "" {
		setup = append(setup, problem)
	}
	if err := ipvsHandle.SetTimeouts(o.tcpTimeout, o.tcpFinTimeout, o.udpTimeout); err != nil {
		log.Warn("Cannot set IPVS timeouts", zap.Error(err))
	}
	if o.fs.Changed("oom-score-adj") {
		if err := os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(o.kp.oomScoreAdj)), 0o644); err != nil {
			log.Warn("Cannot set oom_score_adj", zap.Int("value", o.kp.oomScoreAdj), zap.Error(err))
		}
	}
	return k, ipvsHandle, setup, nil
}

// runProxy wires the data flow (informers, tracker, syncer, runner) with its metrics,
// events and health servers, and runs it until SIGTERM or SIGINT.
func runProxy(o *options, r *resolved, log *zap.Logger, client *kubeapi.Client, api *health.APIServer, k kernel.Kernel, setup []string) {
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(client.Events())
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(kubeapi.Scheme, v1.EventSource{Component: "ipvs-proxier", Host: r.nodeName})
	events := &eventSink{recorder: recorder}
	// kube-proxy announces each start on its Node (reason Starting, action StartKubeProxy:
	// cmd/kube-proxy/app/server.go); node dashboards and runbooks look for it.
	nodeEvents{recorder: recorder, node: r.nodeName}.NodeEvent(v1.EventTypeNormal, "Starting", "StartKubeProxy: ipvs-proxier "+version)
	reportSetup(log, nodeEvents{recorder: recorder, node: r.nodeName}, setup)

	var runner *reconcile.Runner
	var syncer *reconcile.Syncer
	var tracker *source.Tracker
	m := metrics.New(metrics.Sources{
		Counts: func() metrics.Counts { return metrics.Counts(syncer.Counts()) }, Draining: func() int { return syncer.Draining() },
		Pending: func() (int, int) { return tracker.PendingByKind() }, ChangesTotal: func() (uint64, uint64) { return tracker.Totals() },
		// Closures, not method values: syncer is assigned below, after the metrics.
		NoLocal:  func(f kernel.Family) (int, int) { return syncer.NoLocal(f) },
		Families: r.cfg.Families, RulesBackend: r.cfg.RulesBackend.Name,
		Transactions: nftTransactions(k),
	})
	k = kernel.Wrap(k, m.KernelHooks())
	proxyHealth := health.NewProxy(2*o.syncPeriod, nil)
	tracker = source.NewTracker(func() {
		m.Queued(time.Now())
		proxyHealth.Queued()
		runner.Run()
	})
	src := source.NewInformerSource(client, r.nodeName, o.configSyncPeriod, tracker, func(s *discovery.EndpointSlice) {
		events.Warn(proxier.Problem{Kind: "EndpointSlice", Namespace: s.Namespace, Name: s.Name, Reason: "MissingServiceName",
			Message: "EndpointSlice has no " + discovery.LabelServiceName + " label; ignored"})
	})
	dummy := r.cfg.DummyDevice
	// The syncer sets the listeners' addresses at each full sync, before any opens.
	hc := health.NewServices(nil, proxyHealth.Healthy)
	hc.OnError = hcErrorReporter(log, events)
	defer hc.Close()
	r.sync.Logger, r.sync.Events, r.sync.Observer, r.sync.HealthChecks = log, events, m, hc
	r.sync.LocalAddresses = func() ([]netip.Addr, error) { return linux.LocalAddresses(dummy) }
	r.sync.Wake = func() { runner.Run() } // a closure: runner is made below, from the syncer
	syncer = reconcile.NewSyncer(r.sync, k, src, tracker)
	runner = reconcile.NewRunner(syncOnce(syncer.Sync, proxyHealth, func() {
		removeOtherBackends(r.cfg.RulesBackend, log)
		removeKubeRouterLeftovers(dummy, r.sync.ExcludeCIDRs, log)
	}), o.minSyncPeriod, o.syncPeriod)
	runner.Due = syncer.FullDueIn

	monitor := pressure.New(k.Conntrack.Stats, o.conntrackPressure, log, nodeEvents{recorder: recorder, node: r.nodeName}, nil)
	m.Register(monitor)
	m.Register(&metrics.VSCollector{Stats: syncer.VSStats, Limit: o.vsSeriesLimit})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	src.OnWatchError(func(error) { api.Suspect() })
	src.OnServiceCIDRsAbsent(func(err error) {
		log.Info("The API server does not serve ServiceCIDRs; the unallocated-ClusterIP check uses --service-cluster-ip-range",
			zap.String("serviceClusterIPRange", o.serviceCIDRs), zap.Error(err))
	})
	src.Start(ctx.Done())
	go watchAPIServer(ctx, log, client, api, src.HasSynced)
	go programCriticalEarly(ctx, log, client, r.nodeName, syncer)
	go runner.RunWhen(ctx, src.HasSynced)
	if err := linux.WatchAddresses(dummy, ctx.Done(), tracker.AllChanged, syncer.DummyAddressesChanged); err != nil {
		log.Warn("Cannot watch node addresses; NodePorts follow them at the next full sync", zap.Error(err))
	}
	// Wake the runner while real servers drain, so they are reaped on time even when
	// nothing else changes.
	go wait.UntilWithContext(ctx, func(context.Context) {
		if syncer.Draining() > 0 {
			runner.Run()
		}
	}, 5*time.Second)
	go monitor.Run(ctx, o.conntrackInterval)
	hs := &health.Server{Proxy: proxyHealth, NodeEligible: func() bool { return nodeEligible(src.Node()) },
		CountHealthz: m.Healthz, CountLivez: m.Livez, APIServer: api, SetupIncomplete: len(setup) > 0}
	status := statusSources{node: r.nodeName, syncer: syncer, proxy: proxyHealth, ready: hs.Readiness, monitor: monitor, hc: hc, api: api, setup: setup}.report
	serve(ctx, log, "metrics", o.metricsAddr, metricsHandler(m, o.profiling, status))
	serve(ctx, log, "health", o.healthzAddr, hs.Handler())
	log.Info("Running", zap.Duration("minSyncPeriod", o.minSyncPeriod), zap.Duration("syncPeriod", o.syncPeriod),
		zap.String("scheduler", o.scheduler), zap.Int64("memoryLimitBytes", debug.SetMemoryLimit(-1)))
	runner.Loop(ctx)
}

// syncOnce is the runner's sync: it marks the proxy healthy after each success, and
// after the first runs afterFirst, then collects and narrows the GC headroom (gc.go).
func syncOnce(sync func() error, proxyHealth *health.Proxy, afterFirst func()) func() error {
	firstSync := true
	return func() error {
		err := sync()
		if err == nil {
			proxyHealth.Updated()
			if firstSync {
				firstSync = false
				afterFirst()
				afterFirstSync() // gc.go
			}
		}
		return err
	}
}

// allChains lists every chain we own, for the iptables backend.
func allChains() []string {
	var out []string
	for _, cs := range proxier.RuleChains {
		out = append(out, cs...)
	}
	return out
}

// eventSink publishes problems as Warning Events on the object at fault. The recorder's
// correlator aggregates repeats; the syncer already reports each problem once.
type eventSink struct{ recorder record.EventRecorder }

func (e *eventSink) Warn(p proxier.Problem) {
	ref := &v1.ObjectReference{Kind: p.Kind, Namespace: p.Namespace, Name: p.Name, APIVersion: "v1"}
	if p.Kind == "EndpointSlice" {
		ref.APIVersion = "discovery.k8s.io/v1"
	}
	e.recorder.Event(ref, v1.EventTypeWarning, p.Reason, p.Message)
}

// hcErrorReporter logs and publishes a healthCheckNodePort listen failure once per
// Service, port and error, although Apply retries it on every sync.
func hcErrorReporter(log *zap.Logger, events *eventSink) func(proxier.ServiceKey, uint16, error) {
	var mu sync.Mutex
	seen := map[string]struct{}{}
	return func(k proxier.ServiceKey, port uint16, err error) {
		id := fmt.Sprintf("%s/%d/%v", k, port, err)
		mu.Lock()
		_, dup := seen[id]
		seen[id] = struct{}{}
		mu.Unlock()
		if dup {
			return
		}
		log.Warn("Cannot open healthCheckNodePort", zap.String("service", k.String()), zap.Uint16("port", port), zap.Error(err))
		events.Warn(proxier.Problem{Kind: "Service", Namespace: k.Namespace, Name: k.Name, Reason: "FailedToStartServiceHealthcheck",
			Message: fmt.Sprintf("cannot listen on healthCheckNodePort %d: %v", port, err)})
	}
}

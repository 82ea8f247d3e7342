package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// nodeName is the soak's node.
const nodeName = "soak-node"

// The node's netns: pod1 is a client inside the cluster, pod2 and pod3 the untouched
// Services' endpoints (pod4 and pod5 the affinity Service's), client the outside world.
var (
	clientPod = [2]string{"pod1", "10.244.0.11"}
	servePods = [][2]string{{"pod2", "10.244.0.12"}, {"pod3", "10.244.0.13"}}
	// affinityPods serve the ClientIP-affinity Service alone. IPVS misroutes the answer
	// when one client port asks an affinity Service, another Service with the same
	// endpoint, then the affinity Service again within its TIME_WAIT (a limit of IPVS
	// itself: docs/differences.md, TestAffinityPortReuseAcrossServices); the client pod
	// asks both Services from kernel-chosen ports, so they share no endpoint here.
	affinityPods = [][2]string{{"pod4", "10.244.0.14"}, {"pod5", "10.244.0.15"}}
)

// fixedNames are the untouched Services that carry the traffic.
var fixedNames = []string{"soak-clusterip", "soak-nodeport", "soak-local", "soak-affinity"}

// soak is one run: the cluster, the node and the parts that drive and watch it.
type soak struct {
	set    settings
	cp     *harness.ControlPlane
	dep    *harness.Deployment
	node   *harness.Node
	client kubernetes.Interface
	ch     *churner
	churn  *churnApplier
	probe  *prober
	faults *faultRunner
	loops  []*trafficLoop
	rng    *rand.Rand
	start  time.Time
	// fixedTarget is the NodePort Service's TCP address from outside, and
	// fixedNodePort its node port.
	fixedTarget   string
	fixedNodePort int32
}

// runSoak sets up the cluster and the node, soaks for set.Duration, writes the results
// into set.Out and returns the verdicts.
func runSoak(ctx context.Context, set settings) ([]verdict, error) {
	s := &soak{set: set, rng: newRand(set.Seed)}
	defer s.tearDown()
	if err := s.setUp(ctx); err != nil {
		return nil, err
	}
	o := s.soak(ctx)
	vs, err := writeResults(set.Out, o)
	if err != nil {
		return nil, err
	}
	benchkit.Logf("results in %s", set.Out)
	for _, v := range vs {
		benchkit.Logf("%s: %s (%s)", map[bool]string{true: "pass", false: "FAIL"}[v.Pass], v.Name, v.Detail)
	}
	if failed(vs) != nil {
		// The daemon's log, beside the results of a run that failed a verdict.
		if out, err := s.node.MustExec("tail -n 5000 /tmp/daemon.log"); err == nil {
			_ = os.WriteFile(filepath.Join(set.Out, "daemon-tail.log"), []byte(out), 0o644)
		}
	}
	return vs, nil
}

func (s *soak) tearDown() {
	if s.node != nil {
		s.node.Stop()
	}
	if s.cp != nil {
		s.cp.Stop()
	}
}

// setUp starts the control plane (the benchmarks' wide ranges), applies deploy/, loads
// the workload, boots the node with the daemon, makes the pods, the outside client and
// the flap address, creates the untouched Services and the probe, and waits until the
// daemon serves them.
func (s *soak) setUp(ctx context.Context) error {
	var err error
	if s.cp, err = benchkit.StartControlPlane(); err != nil {
		return err
	}
	if s.dep, err = s.cp.ApplyDeploy(ctx); err != nil {
		return err
	}
	if s.client, err = loaderClient(s.cp); err != nil {
		return err
	}
	benchkit.Logf("loading %d Services x %d endpoints", s.set.Services, s.set.Endpoints)
	w := &benchkit.Workload{Client: s.client, Node: nodeName, Endpoints: s.set.Endpoints, Parallel: 16, Etcd: benchkit.LoadVia(s.cp)}
	if err := w.Grow(ctx, s.set.Services); err != nil {
		return err
	}
	for k, v := range s.dep.Files {
		if path.Base(k) == "config.conf" {
			s.dep.Files[k] = withProfiling(v)
		}
	}
	if s.node, err = s.cp.StartNodeWith(ctx, nodeName, s.dep, harness.NodeOptions{MemoryMB: 4096}); err != nil {
		return err
	}
	if err := s.node.AddPod(clientPod[0], clientPod[1]); err != nil {
		return err
	}
	for _, p := range append(servePods, affinityPods...) {
		if err := s.node.AddPod(p[0], p[1]); err != nil {
			return err
		}
	}
	if err := s.node.AddClient("client", "192.168.50.2", "192.168.50.1"); err != nil {
		return err
	}
	if _, err := s.node.MustExec("ip link add soak0 type dummy && ip link set soak0 up && ip addr add " + flapAddress + "/32 dev soak0"); err != nil {
		return err
	}
	if err := s.createFixed(ctx); err != nil {
		return err
	}
	if s.probe, err = newProber(ctx, s.cp.Admin, s.node); err != nil {
		return err
	}
	benchkit.Logf("waiting for the daemon's first sync")
	if _, err := s.probe.change(ctx, 10*time.Minute); err != nil {
		out, _ := s.node.MustExec("tail -30 /tmp/daemon.log")
		return fmt.Errorf("daemon never followed the probe: %w\n%s", err, out)
	}
	for _, l := range s.loops {
		if waitUntil(ctx, 2*time.Minute, time.Second, func() bool { _, err := s.node.Ask(l.NS, l.Proto, l.Target); return err == nil }) < 0 {
			return fmt.Errorf("%s: %s never answered", l.Name, l.Target)
		}
	}
	if waitUntil(ctx, 2*time.Minute, 2*time.Second, func() bool {
		_, code, _ := s.node.Exec(fmt.Sprintf("ipvsadm -Ln -t %s:%d", flapAddress, s.fixedNodePort))
		return code == 0
	}) < 0 {
		return fmt.Errorf("no NodePort on %s, the address the address-flap fault removes", flapAddress)
	}
	models, err := loadModels(ctx, s.client, s.set.Services)
	if err != nil {
		return err
	}
	s.ch = newChurner(s.set.Seed, models)
	s.churn = &churnApplier{c: s.client, ch: s.ch}
	s.faults = &faultRunner{s: s}
	return nil
}

// loaderClient is benchkit's loader client without the apiserver's warnings logged:
// the churn's writes would log one for each deprecated field value it meets.
func loaderClient(cp *harness.ControlPlane) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(cp.RESTCfg)
	cfg.WarningHandler = rest.NoWarnings{}
	return benchkit.LoaderClient(cfg)
}

// createFixed creates the untouched Services, their endpoints (pod2 and pod3; pod4 and
// pod5 for the affinity Service), and the traffic loops through them: ClusterIP (TCP
// and UDP, from a pod), NodePort (TCP and UDP, from outside), NodePort with ETP=Local
// (TCP, from outside), ClientIP affinity (TCP, from a pod).
func (s *soak) createFixed(ctx context.Context) error {
	both := []v1.ServicePort{{Name: "tcp", Port: 80, Protocol: v1.ProtocolTCP}, {Name: "udp", Port: 80, Protocol: v1.ProtocolUDP}}
	specs := map[string]v1.ServiceSpec{
		"soak-clusterip": {Ports: both},
		"soak-nodeport":  {Type: v1.ServiceTypeNodePort, Ports: both},
		"soak-local":     {Type: v1.ServiceTypeNodePort, ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal, Ports: both[:1]},
		"soak-affinity":  {SessionAffinity: v1.ServiceAffinityClientIP, Ports: both[:1]},
	}
	svcs := map[string]*v1.Service{}
	for _, name := range fixedNames {
		svc, err := s.cp.Admin.CoreV1().Services("default").Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: specs[name]}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		svcs[name] = svc
		var eps []harness.Endpoint
		pods := servePods
		if name == "soak-affinity" {
			pods = affinityPods
		}
		for _, p := range pods {
			eps = append(eps, harness.Endpoint{IP: p[1], Node: nodeName})
		}
		sl := harness.ReadySlice(name, name+"-1", 80, v1.ProtocolTCP, eps...)
		sl.Ports = nil
		for _, p := range svc.Spec.Ports {
			sl.Ports = append(sl.Ports, discovery.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To[int32](80), Protocol: ptr.To(p.Protocol)})
		}
		if _, err := s.cp.Admin.DiscoveryV1().EndpointSlices("default").Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	cip := func(name string) string { return svcs[name].Spec.ClusterIP + ":80" }
	np := func(name string, i int) string {
		return fmt.Sprintf("%s:%d", harness.NodeIP, svcs[name].Spec.Ports[i].NodePort)
	}
	s.fixedNodePort = svcs["soak-nodeport"].Spec.Ports[0].NodePort
	s.fixedTarget = np("soak-nodeport", 0)
	for _, f := range []flow{
		{Name: "ClusterIP", NS: clientPod[0], Proto: "tcp", Target: cip("soak-clusterip")},
		{Name: "ClusterIP", NS: clientPod[0], Proto: "udp", Target: cip("soak-clusterip")},
		{Name: "NodePort", NS: "client", Proto: "tcp", Target: np("soak-nodeport", 0)},
		{Name: "NodePort", NS: "client", Proto: "udp", Target: np("soak-nodeport", 1)},
		{Name: "NodePort ETP=Local", NS: "client", Proto: "tcp", Target: np("soak-local", 0)},
		{Name: "ClientIP affinity", NS: clientPod[0], Proto: "tcp", Target: cip("soak-affinity"), Sticky: true},
	} {
		s.loops = append(s.loops, &trafficLoop{flow: f})
	}
	return nil
}

// soak runs the churn, the faults, the traffic, the sampler and the drain scans for the
// run's duration, then stops them, lets the node settle, compares it with plan and
// gathers the outcome.
func (s *soak) soak(ctx context.Context) outcome {
	s.start = time.Now()
	o := outcome{Set: s.set, Machine: benchkit.Machine(s.node), Started: s.start}
	benchkit.Logf("soaking for %v", s.set.Duration)
	var wg sync.WaitGroup
	goRun := func(fn func()) { wg.Add(1); go func() { defer wg.Done(); fn() }() }

	trafficCtx, stopTraffic := context.WithCancel(ctx)
	ev := newEvidence(s.node, s.set.Out)
	for _, l := range s.loops {
		goRun(func() { l.run(trafficCtx, s.node, ev.capture) })
	}
	churnCtx, stopChurn := context.WithTimeout(ctx, s.set.Duration)
	defer stopChurn()
	goRun(func() { s.churn.run(churnCtx, s.set.ChurnPerMinute) })
	faultCtx, stopFaults := context.WithTimeout(ctx, s.set.FaultTo)
	defer stopFaults()
	plan := s.set.plan().schedule(s.set.Seed)
	faultsDone := make(chan struct{})
	go func() { s.faults.run(faultCtx, ctx, plan); close(faultsDone) }()

	sm := &sampler{s: s}
	var drain drainWatch
	o.Samples = append(o.Samples, sm.take(ctx))
	o.Samples[0].Minute = 0 // the start, whatever the first sample took
	sampleTick, drainTick := time.NewTicker(s.set.Sample), time.NewTicker(s.set.DrainScan)
	end := time.After(s.set.Duration)
	windowStart, dumped := s.set.windowStart(), false
loop:
	for {
		select {
		case <-sampleTick.C:
			o.Samples = append(o.Samples, sm.take(ctx))
			if !dumped && time.Since(s.start) >= windowStart {
				s.dumpGoroutines(goroutinesWindowFile)
				dumped = true
			}
		case <-drainTick.C:
			s.scanDrain(&drain, &o.Drain)
		case <-end:
			break loop
		}
	}
	sampleTick.Stop()
	drainTick.Stop()
	stopChurn()
	<-faultsDone
	benchkit.Logf("churn and faults stopped; waiting for the kernel edits' checks")
	o.Faults = s.faults.wait()
	stopTraffic()
	wg.Wait()
	s.scanDrain(&drain, &o.Drain)
	o.Samples = append(o.Samples, sm.take(ctx))
	s.dumpGoroutines(goroutinesEndFile)
	o.Applied, o.Refused, o.Kinds = s.churn.applied.Load(), s.churn.failed.Load(), s.churn.kinds
	for _, l := range s.loops {
		o.Loops = append(o.Loops, loopResult{Name: l.Name, Proto: l.Proto, From: l.NS, Target: l.Target, OK: l.ok.Load(), Failed: l.failed.Load(),
			ByWindow: byWindow(l.failureTimes(), o.Faults), Switches: l.switches, FirstErrors: l.firstErrs})
	}
	o.Compare = s.compare(ctx)
	o.Finished = time.Now()
	return o
}

// scanDrain reads the IPVS table's weight-0 real servers into the watch.
func (s *soak) scanDrain(w *drainWatch, r *drainResult) {
	out, err := s.node.MustExec("ipvsadm -Ln")
	if err != nil {
		return
	}
	w.observe(time.Now(), zeroWeight(out))
	r.Longest, r.Which, r.Scans = w.longest, w.which, r.Scans+1
}

// compare waits until the daemon has no change pending and a full sync has passed,
// then compares the node's state with plan's; a difference is looked at again after
// another sync period (a change may have been in flight), three times at most.
func (s *soak) compare(ctx context.Context) compareResult {
	waitUntil(ctx, 2*time.Minute, time.Second, func() bool {
		return s.metric("kubeproxy_sync_proxy_rules_endpoint_changes_pending")+s.metric("kubeproxy_sync_proxy_rules_service_changes_pending") == 0
	})
	dir, err := os.MkdirTemp("", "soak-plan-")
	if err != nil {
		return compareResult{Err: err.Error()}
	}
	defer os.RemoveAll(dir)
	if err := harness.BuildNodeBinaries(dir); err != nil {
		return compareResult{Err: err.Error()}
	}
	var r compareResult
	for r.Attempts = 1; r.Attempts <= 3; r.Attempts++ {
		time.Sleep(syncPeriod + 5*time.Second)
		plan, err := s.planOutput(dir)
		if err != nil {
			r.Err = err.Error()
			continue
		}
		nodeOut, err := s.node.MustExec(nodeStateScript)
		if err != nil {
			r.Err = err.Error()
			continue
		}
		want, got := stateLines(plan), stateLines(nodeOut)
		r.Err, r.Lines = "", len(want)
		r.OnlyPlan, r.OnlyNode = diffLines(want, got)
		benchkit.Logf("compare %d: %d lines, %d only in plan, %d only in the node", r.Attempts, len(want), len(r.OnlyPlan), len(r.OnlyNode))
		if len(r.OnlyPlan)+len(r.OnlyNode) == 0 {
			return r
		}
		benchkit.Logf("differences:\n%s\n---\n%s", head(r.OnlyPlan, 10), head(r.OnlyNode, 10))
	}
	r.Attempts--
	if r.Err != "" {
		r.Err = strings.TrimSpace(r.Err)
	}
	return r
}

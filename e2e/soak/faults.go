package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// faultRecord is one fault injected and what followed.
type faultRecord struct {
	Kind   string
	Detail string
	Err    string // the injection or the recovery check failed for the soak's own reasons
	At     time.Duration
	Random bool
	// Start and End bound the injection; the recovery clock starts at End.
	Start, End time.Time
	// Recovery is End to the daemon's repair (or its following a change again); -1 when
	// it did not within Bound.
	Recovery, Bound time.Duration
}

// recovered reports whether the daemon recovered within the fault's bound.
func (r faultRecord) recovered() bool { return r.Err == "" && r.Recovery >= 0 && r.Recovery <= r.Bound }

// faultRunner injects the planned faults one after another and checks each recovery;
// kernel edits are checked in the background, since their bounds are long.
type faultRunner struct {
	s        *soak
	mu       sync.Mutex
	records  []faultRecord
	pending  sync.WaitGroup
	repaired atomic.Int64 // kernel edits seen repaired
	begun    []time.Time
	kinds    []string
}

// The recovery bounds. A restarted daemon or apiserver is recovered when a change made
// after it reaches the kernel: relisting and re-reading 5,000 Services in the emulated VM
// takes tens of seconds. A kernel edit is bounded in the daemon's full syncs (every
// syncPeriod, deploy/'s 30 s), not in time: a full sync repairs what it finds missing or
// recounted, and reads the real servers of its virtual servers in a rotation (rotationSyncs),
// so a real server edited by hand is back within that; on a host whose CPU the emulated
// VM shares, a full sync took 93 s where it takes 2, and a bound in seconds measured the
// host.
const (
	syncPeriod        = 30 * time.Second
	fullSyncsRepair   = 2  // one may be under way when the edit is made
	fullSyncsRotation = -1 // rotationSyncs of the node's virtual servers
	boundEdit         = 30 * time.Minute
	boundRestart      = 3 * time.Minute
	boundAddress      = time.Minute
	boundConntrack    = 2 * time.Minute
	apiserverDowntime = 15 * time.Second
)

// flapAddress is the node address the address-flap fault removes and adds back: on a
// dummy interface of its own, so no traffic uses it, with NodePorts on it as on every
// node address.
const flapAddress = "192.168.77.1"

// run injects plan's faults at their times from the soak's start until schedule ends;
// a fault begun runs to the end of its recovery check (under ctx).
func (f *faultRunner) run(schedule, ctx context.Context, plan []plannedFault) {
	for _, p := range plan {
		select {
		case <-schedule.Done():
			return
		case <-time.After(time.Until(f.s.start.Add(p.At))):
		}
		benchkit.Logf("fault: %s (planned at %v)", p.Kind, p.At)
		f.mu.Lock()
		f.begun, f.kinds = append(f.begun, time.Now()), append(f.kinds, p.Kind)
		f.mu.Unlock()
		rec := faultRecord{Kind: p.Kind, At: time.Since(f.s.start), Random: p.Random, Start: time.Now(), Recovery: -1}
		var err error
		switch p.Kind {
		case faultDaemonKill:
			err = f.daemonKill(ctx, &rec)
		case faultAPIRestart:
			err = f.apiRestart(ctx, &rec, false)
		case faultRelist:
			err = f.apiRestart(ctx, &rec, true)
		case faultKernelEdit:
			f.kernelEdits(ctx, rec)
			continue
		case faultAddressFlap:
			err = f.addressFlap(ctx, &rec)
		case faultConntrackFil:
			err = f.conntrackFill(ctx, &rec)
		}
		if err != nil {
			rec.Err = err.Error()
		}
		f.add(rec)
	}
}

func (f *faultRunner) add(r faultRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := "not recovered"
	if r.Recovery >= 0 {
		rec = "recovery " + r.Recovery.Round(time.Millisecond).String()
	}
	benchkit.Logf("fault %s: %s (bound %v) %s %s", r.Kind, rec, r.Bound, r.Detail, r.Err)
	f.records = append(f.records, r)
}

// begunIn names the faults begun in [from, to).
func (f *faultRunner) begunIn(from, to time.Time) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for i, t := range f.begun {
		if !t.Before(from) && t.Before(to) {
			out = append(out, f.kinds[i])
		}
	}
	return strings.Join(out, ";")
}

// wait waits for the background checks, then returns every record.
func (f *faultRunner) wait() []faultRecord {
	f.pending.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]faultRecord(nil), f.records...)
}

// probeRecovery times a change made right after the fault until the node shows it.
func (f *faultRunner) probeRecovery(ctx context.Context, rec *faultRecord, bound time.Duration) error {
	rec.End, rec.Bound = time.Now(), bound
	if _, err := f.s.probe.change(ctx, bound); err != nil {
		return err
	}
	rec.Recovery = time.Since(rec.End)
	return nil
}

// daemonKill kills the daemon with SIGKILL and starts it again as the DaemonSet's pod
// would be restarted: the kernel state stays and is adopted.
func (f *faultRunner) daemonKill(ctx context.Context, rec *faultRecord) error {
	if _, err := f.s.node.MustExec("kill -9 $(cat /tmp/daemon.pid); sleep 1; sh /start-daemon.sh"); err != nil {
		return err
	}
	return f.probeRecovery(ctx, rec, boundRestart)
}

// apiRestart stops the apiserver (every watch breaks), and with compact compacts etcd
// to its current revision meanwhile, so the informers' resume points are gone: their
// watches get 410 Gone and they list again (the API's "Efficient detection of changes",
// kubernetes.io/docs/reference/using-api/api-concepts); then starts it again.
func (f *faultRunner) apiRestart(ctx context.Context, rec *faultRecord, compact bool) error {
	f.s.cp.StopAPIServer()
	if compact {
		rev, err := compactEtcd(ctx, f.s.cp.EtcdURL)
		if err != nil {
			_ = f.s.cp.StartAPIServer()
			return err
		}
		rec.Detail = fmt.Sprintf("etcd compacted at revision %d", rev)
	}
	time.Sleep(apiserverDowntime)
	if err := f.s.cp.StartAPIServer(); err != nil {
		return err
	}
	return f.probeRecovery(ctx, rec, boundRestart)
}

// compactEtcd compacts etcd at its current revision, physically.
func compactEtcd(ctx context.Context, url string) (int64, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "/registry/soak-compaction-point")
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	_, err = cli.Compact(ctx, rev, clientv3.WithCompactPhysical())
	return rev, err
}

// addressFlap removes the flap address and adds it back once its NodePorts are gone;
// recovered when the fixed NodePort Service's virtual server on it is back.
func (f *faultRunner) addressFlap(ctx context.Context, rec *faultRecord) error {
	vs := fmt.Sprintf("ipvsadm -Ln -t %s:%d >/dev/null 2>&1", flapAddress, f.s.fixedNodePort)
	if _, err := f.s.node.MustExec("ip addr del " + flapAddress + "/32 dev soak0"); err != nil {
		return err
	}
	gone := waitUntil(ctx, 30*time.Second, time.Second, func() bool { _, code, _ := f.s.node.Exec(vs); return code != 0 })
	rec.Detail = "NodePorts on the address not removed within 30 s"
	if gone >= 0 {
		rec.Detail = fmt.Sprintf("its NodePorts removed %v after the address", gone.Round(100*time.Millisecond))
	}
	if _, err := f.s.node.MustExec("ip addr add " + flapAddress + "/32 dev soak0"); err != nil {
		return err
	}
	rec.End, rec.Bound = time.Now(), boundAddress
	rec.Recovery = waitUntil(ctx, boundAddress, 250*time.Millisecond, func() bool { _, code, _ := f.s.node.Exec(vs); return code == 0 })
	return nil
}

// conntrackFill lowers nf_conntrack_max so that held connections fill the table to
// about 85 % (over the daemon's 0.8 pressure threshold, short of drops), holds them
// for half a minute, then releases them and restores the limit; recovered when the
// daemon reports no pressure again.
func (f *faultRunner) conntrackFill(ctx context.Context, rec *faultRecord) error {
	const ct, held = "/proc/sys/net/netfilter/", 200
	out, err := f.s.node.MustExec("cat " + ct + "nf_conntrack_count " + ct + "nf_conntrack_max")
	if err != nil {
		return err
	}
	v := strings.Fields(out)
	if len(v) != 2 {
		return fmt.Errorf("conntrack: %q", out)
	}
	var count, orig int
	fmt.Sscan(v[0], &count)
	fmt.Sscan(v[1], &orig)
	limit := int(math.Ceil(float64(count+held) / 0.85))
	if _, err := f.s.node.MustExec(fmt.Sprintf("echo %d > %snf_conntrack_max", limit, ct)); err != nil {
		return err
	}
	restore := func() { _, _ = f.s.node.MustExec(fmt.Sprintf("echo %d > %snf_conntrack_max", orig, ct)) }
	if err := f.s.node.Hold("client", f.s.fixedTarget, held); err != nil {
		_ = f.s.node.Release()
		restore()
		return err
	}
	pressure := waitUntil(ctx, 30*time.Second, 2*time.Second, func() bool { return f.s.metric("ipvs_proxier_conntrack_pressure") == 1 })
	rec.Detail = fmt.Sprintf("%d entries, limit %d (was %d), %d held; pressure reported: %v", count, limit, orig, held, pressure >= 0)
	time.Sleep(time.Duration(max(0, 30*time.Second-pressure)))
	_ = f.s.node.Release()
	restore()
	rec.End, rec.Bound = time.Now(), boundConntrack
	rec.Recovery = waitUntil(ctx, boundConntrack, 2*time.Second, func() bool { return f.s.metric("ipvs_proxier_conntrack_pressure") == 0 })
	return nil
}

// waitUntil polls ok every step up to d; it returns how long it took, or -1.
func waitUntil(ctx context.Context, d, step time.Duration, ok func() bool) time.Duration {
	start := time.Now()
	for {
		if ok() {
			return time.Since(start)
		}
		if time.Since(start) > d || ctx.Err() != nil {
			return -1
		}
		time.Sleep(step)
	}
}

// The daemon's real-server rotation (sync/reconcile/ipvs: RotationPeriod): a full sync
// reads the real servers of 1/CheckEvery of its virtual servers, CheckEvery doubled until
// that is at most rotationReads of them.
const (
	checkEvery    = 10
	rotationReads = 500
)

// rotationSyncs is the number of full syncs in which a real server edited by hand is
// repaired at n virtual servers: the daemon's rotation period, and one full sync under
// way at the edit. Where n could not be read (0 or NaN), the period at the most virtual
// servers a soak makes (two per Service at the largest SOAK_SERVICES).
func rotationSyncs(n float64) int {
	if math.IsNaN(n) || n == 0 {
		n = 2 * 65536
	}
	p := checkEvery
	for float64(p*rotationReads) < n {
		p *= 2
	}
	return p + 1
}

// maxCount is the largest of the counts read, 0 until one could be read: a scrape that
// fails (NaN) leaves it as it was.
type maxCount struct{ most float64 }

// read takes one count in.
func (c *maxCount) read(n float64) {
	if n > c.most { // false for NaN
		c.most = n
	}
}

// kernelEdit is one change made behind the daemon's back, on one Service's objects.
type kernelEdit struct {
	name      string
	edit      string // shell in the node
	check     string // shell that succeeds once repaired
	fullSyncs int    // the daemon's full syncs it must be repaired within
}

// editsFor are the edits the kernel-edit fault makes on a Service with ClusterIP vip,
// port and a ready endpoint at rs: a virtual server deleted, a real server deleted or
// reweighted, a set member and an address deleted, a rule of ours deleted.
func editsFor(vip string, port int32, rs string) []kernelEdit {
	vs := fmt.Sprintf("%s:%d", vip, port)
	// Back at a weight above 0: a real server at weight 0 is draining, not repaired.
	has := "ipvsadm -Ln -t " + vs + " | awk '$2 == \"" + rs + "\" && $4 > 0 {f = 1} END {exit !f}'"
	member := fmt.Sprintf("KUBE-CLUSTER-IP %s,tcp:%d", vip, port)
	const rule = "-t nat -D KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT"
	return []kernelEdit{
		{"virtual-server-deleted", "ipvsadm -D -t " + vs, has, fullSyncsRepair},
		{"real-server-deleted", "ipvsadm -d -t " + vs + " -r " + rs, has, fullSyncsRotation},
		{"real-server-weight", "ipvsadm -e -t " + vs + " -r " + rs + " -m -w 5", "ipvsadm -Ln -t " + vs + " | awk '$2 == \"" + rs + "\" {w=$4} END {exit w != 1}'", fullSyncsRotation},
		{"set-member-deleted", "ipset del " + member, "ipset test " + member + " 2>/dev/null", fullSyncsRepair},
		{"address-deleted", "ip addr del " + vip + "/32 dev kube-ipvs0", "ip -o addr show dev kube-ipvs0 | grep -q ' " + vip + "/32 '", fullSyncsRepair},
		{"rule-deleted", "iptables " + rule, "iptables-save -t nat | grep -q -- '-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT'", fullSyncsRepair},
	}
}

// kernelEdits makes each of editsFor on a Service of its own (held from the churn until
// its check ends), once the node shows the Service as expected, and checks each repair
// in the background.
func (f *faultRunner) kernelEdits(ctx context.Context, base faultRecord) {
	edits := editsFor("", 0, "") // the kinds, in order; each gets its own Service below
	for k := range edits {
		rec := base
		rec.Kind, rec.Bound = faultKernelEdit+"/"+edits[k].name, boundEdit
		i, vip, m, err := f.pickService(ctx)
		if err != nil {
			rec.Err = err.Error()
			f.add(rec)
			continue
		}
		var ready epModel
		for _, e := range m.Endpoints {
			if e.Ready {
				ready = e
			}
		}
		rs := fmt.Sprintf("%s:8080", benchkit.EpIP(i, ready.Slot))
		e := editsFor(vip, m.Port, rs)[k]
		rec.Detail = benchkit.SvcName(i) + ": " + e.edit
		before := f.s.fullSyncs()
		if _, err := f.s.node.MustExec(e.edit); err != nil {
			f.s.ch.release(i)
			rec.Err = err.Error()
			f.add(rec)
			continue
		}
		rec.Start, rec.End = time.Now(), time.Now()
		f.pending.Add(1)
		go func() {
			defer f.pending.Done()
			defer f.s.ch.release(i)
			syncs, counted, limit := 0.0, time.Now(), e.fullSyncs
			var vss maxCount // the rotation's period follows the node's count
			if limit == fullSyncsRotation {
				vss.read(f.s.metric("ipvs_proxier_virtual_servers"))
				limit = rotationSyncs(vss.most)
				// Bounded in full syncs; the time is a backstop, at twice syncPeriod a sync.
				rec.Bound = max(boundEdit, time.Duration(limit+1)*2*syncPeriod)
			}
			rec.Recovery = waitUntil(ctx, rec.Bound, 3*time.Second, func() bool {
				if _, code, _ := f.s.node.Exec(e.check); code == 0 {
					return true
				}
				// A scrape is 300 kB through the agent: the syncs are counted every
				// 20 s, a third of a sync period.
				if time.Since(counted) < 20*time.Second {
					return false
				}
				counted = time.Now()
				if n := f.s.fullSyncs(); n >= 0 && before >= 0 {
					syncs = counterSince(n, before)
				}
				if e.fullSyncs == fullSyncsRotation {
					vss.read(f.s.metric("ipvs_proxier_virtual_servers"))
					limit = rotationSyncs(vss.most)
				}
				return syncs > float64(limit)
			})
			if _, code, _ := f.s.node.Exec(e.check); code != 0 {
				rec.Recovery = -1
			}
			rec.Detail += fmt.Sprintf(" (%.0f full syncs since; limit %d)", syncs, limit)
			if rec.Recovery >= 0 {
				f.repaired.Add(1)
			}
			f.add(rec)
		}()
	}
}

// pickService holds a churned Service that exists and has a ready endpoint, and waits
// until the node shows that endpoint (the daemon may still be programming the Service's
// last change).
func (f *faultRunner) pickService(ctx context.Context) (int, string, svcModel, error) {
	for range 50 {
		i := f.s.rng.IntN(f.s.set.Services)
		if !f.s.ch.hold(i) {
			continue
		}
		m := f.s.ch.get(i)
		ready := -1
		for _, e := range m.Endpoints {
			if e.Ready {
				ready = e.Slot
			}
		}
		if !m.Exists || ready < 0 {
			f.s.ch.release(i)
			continue
		}
		svc, err := f.s.client.CoreV1().Services(benchkit.Namespace).Get(ctx, benchkit.SvcName(i), metav1.GetOptions{})
		if err != nil {
			f.s.ch.release(i)
			continue
		}
		vip := svc.Spec.ClusterIP
		check := fmt.Sprintf("ipvsadm -Ln -t %s:%d | grep -q ' %s:8080 '", vip, m.Port, benchkit.EpIP(i, ready))
		if waitUntil(ctx, 20*time.Second, time.Second, func() bool { _, code, _ := f.s.node.Exec(check); return code == 0 }) >= 0 {
			return i, vip, m, nil
		}
		f.s.ch.release(i)
	}
	return 0, "", svcModel{}, fmt.Errorf("no churned Service with a ready endpoint programmed")
}

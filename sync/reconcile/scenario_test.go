package reconcile

import (
	"bytes"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// TestScenarios runs the multi-step scripts in testdata/scenarios/*.txtar against the
// fake kernel. Each archive is the txtar format (golang.org/x/tools/txtar): a script
// first, then files, each after a line "-- NAME --". A script line is a command (see
// scenario.run); "#" starts a comment. A line whose first word is "!" must fail. `go test
// -run TestScenarios -update` rewrites the files that `cmp` compares with.
func TestScenarios(t *testing.T) {
	paths, err := filepath.Glob("testdata/scenarios/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			runScenario(t, path, nil)
		})
	}
}

// TestScenariosNftables runs every scenario with the nftables rules backend: the same
// sets, members, virtual servers and addresses, and the same operations, whichever
// backend holds the rules (the real kernel's run of them is TestScenariosRealKernel in
// the VM without xtables).
func TestScenariosNftables(t *testing.T) {
	paths, err := filepath.Glob("testdata/scenarios/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			runScenarioIn(t, path, nil, 0, proxier.RulesNftables)
		})
	}
}

// TestScenariosWithFaults runs every scenario again with 10 % of the syncer's kernel
// calls failing (kernel.Faulty, three seeds): a `sync` repeats until one succeeds, and
// every assertion but the operation counts must still hold, so a failed write is always
// retried into the same end state. The drift commands and the dumps reach the fake
// directly.
func TestScenariosWithFaults(t *testing.T) {
	paths, err := filepath.Glob("testdata/scenarios/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	t.Cleanup(func() {
		if n := injectedTotal.Load(); n < 50 {
			t.Errorf("only %d failures injected over every scenario and seed: the faults reach nothing", n)
		} else {
			t.Logf("%d failures injected", n)
		}
	})
	for _, path := range paths {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/seed=%d", strings.TrimSuffix(filepath.Base(path), ".txtar"), seed), func(t *testing.T) {
				runScenarioWith(t, path, nil, seed)
			})
		}
	}
}

// runScenario runs one archive. With real nil it runs against a new fake kernel;
// otherwise against real, the node's kernel (see scenario_vm_test.go).
func runScenario(t *testing.T, path string, real *realKernel) { runScenarioWith(t, path, real, 0) }

// injectedTotal counts the failures TestScenariosWithFaults injected, all scenarios together.
var injectedTotal atomic.Int64

// faultRate is the share of kernel calls that fail in TestScenariosWithFaults.
const faultRate = 0.1

// runScenarioWith is runScenario with, for a faultSeed other than 0, faultRate of the
// syncer's kernel calls failing.
func runScenarioWith(t *testing.T, path string, real *realKernel, faultSeed uint64) {
	var backend *proxier.RulesBackend
	if real != nil {
		backend = real.backend
	}
	runScenarioIn(t, path, real, faultSeed, backend)
}

// runScenarioIn is runScenarioWith with the syncer on the given rules backend (nil is the
// default).
func runScenarioIn(t *testing.T, path string, real *realKernel, faultSeed uint64, backend *proxier.RulesBackend) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := parseTxtar(data)
	sc := &scenario{t: t, files: a.files, now: time.Unix(1_700_000_000, 0), fake: kernel.NewFake(), real: real, backend: backend}
	if faultSeed != 0 {
		sc.faulty = kernel.NewFaulty(sc.fake.Kernel(), faultRate, faultSeed)
	}
	for i, line := range strings.Split(a.script, "\n") {
		if f := strings.Fields(strings.SplitN(line, "#", 2)[0]); len(f) > 0 {
			sc.line = i + 1
			sc.exec(f)
		}
	}
	if sc.faulty != nil {
		injectedTotal.Add(int64(sc.faulty.Injected))
	}
	if sc.updated && real == nil && sc.faulty == nil && backend == nil {
		if err := os.WriteFile(path, a.format(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// scenario is one script's state: the fake kernel outlives restarts of the syncer.
type scenario struct {
	t       *testing.T
	line    int
	files   map[string]*string
	updated bool

	now  time.Time
	opts []func(*Options)
	fake *kernel.Fake
	// real, when set, is the kernel the syncer programs instead of fake; the drift
	// commands and the dumps go to it, and the fake stays empty.
	real *realKernel
	h    *harness
	// backend, when set, is the syncer's rules backend.
	backend *proxier.RulesBackend
	// faulty, when set, stands between the syncer and the fake and fails some calls.
	faulty *kernel.Faulty
	// refuser stands between the syncer and its kernel (faulty, when set, is it) and
	// refuses every write that carries the address refused (the refuse command).
	refuser *kernel.Faulty
	refused netip.Addr
	// events are the Warning Events the syncer published.
	events eventLog
}

// eventLog records the problems a syncer published, as the daemon's Event sink would.
type eventLog struct {
	mu    sync.Mutex
	warns []proxier.Problem
}

func (l *eventLog) Warn(p proxier.Problem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.warns = append(l.warns, p)
}

// count returns how many Events of reason the Service k got.
func (l *eventLog) count(k proxier.ServiceKey, reason string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, p := range l.warns {
		if p.Namespace == k.Namespace && p.Name == k.Name && p.Reason == reason {
			n++
		}
	}
	return n
}

// carries reports whether write op (a kernel batch's op) carries address a: a set
// member naming it, a virtual server on it or one of its real servers, its bind.
func carries(op any, a netip.Addr) bool {
	switch op := op.(type) {
	case kernel.SetOp:
		return op.Entry.IP == a || op.Entry.IP2 == a
	case kernel.VirtualServerOp:
		return op.VS.Address == a
	case kernel.RealServerOp:
		return op.VS.Address == a
	case kernel.AddressOp:
		return op.Addr == a
	}
	return false
}

func (sc *scenario) fatalf(format string, args ...any) {
	sc.t.Helper()
	sc.t.Fatalf("line %d: "+format, append([]any{sc.line}, args...)...)
}

func (sc *scenario) errorf(format string, args ...any) {
	sc.t.Helper()
	sc.t.Errorf("line %d: "+format, append([]any{sc.line}, args...)...)
}

// harness starts the syncer at the first command that needs it, with the options given.
func (sc *scenario) harness() *harness {
	if sc.h == nil {
		opts := append([]func(*Options){func(o *Options) { o.Now = func() time.Time { return sc.now }; o.Events = &sc.events }}, sc.opts...)
		if sc.backend != nil {
			opts = append(opts, func(o *Options) { o.Config.RulesBackend = sc.backend })
		}
		k := kernel.Kernel{}
		if sc.real != nil {
			k = sc.real.k
		}
		if k.IPVS == nil {
			k = sc.fake.Kernel()
		}
		sc.refuser = sc.faulty
		if sc.refuser == nil {
			sc.refuser = kernel.NewFaulty(k, 0, 1)
		}
		sc.refuser.RefuseWhere(sc.refusing())
		sc.h = newHarness(sc.t, sc.refuser.Kernel(), sc.fake, opts...)
	}
	return sc.h
}

// refusing is the refuser's predicate for the address refused (none: nil).
func (sc *scenario) refusing() func(any) bool {
	if !sc.refused.IsValid() {
		return nil
	}
	a := sc.refused
	return func(op any) bool { return carries(op, a) }
}

func (sc *scenario) exec(f []string) {
	sc.t.Helper()
	if f[0] == "!" {
		f = f[1:]
		if err := sc.run(f); err == nil {
			sc.errorf("%s: succeeded, want a failure", strings.Join(f, " "))
		}
		return
	}
	if err := sc.run(f); err != nil {
		sc.fatalf("%s: %v", strings.Join(f, " "), err)
	}
}

// run executes one command. An error is the command's failure; assertions that do not
// hold are reported as test errors and return nil.
//
//	option graceful=DUR | syncPeriod=DUR | checkEvery=N | exclude=CIDR   before the first sync
//	apply FILE                 load the objects of FILE; their Services are changed
//	delete service NS/NAME     delete a Service and its slices
//	sync [full]                one sync (full: every Service changed); ops are counted from here
//	clock +DUR                 advance the syncer's clock
//	restart                    a new syncer (same fake kernel, same objects), as a daemon restart
//	kernel ...                 drift made behind the syncer's back (see kernelCmd)
//	cmp ipvs|addrs|sets|rules|dump FILE   that part of the fake's dump equals FILE
//	ops [OP=N ...]             the state-changing operations of the last sync, exactly
//	calls OP=N ...             operations (reads too) of the last sync, those named only
//	weights PROTO VIP:PORT [RS=W ...]   the real servers of a virtual server, exactly
//	flows [ORIGDST>REPLYSRC ...]        the UDP conntrack flows, exactly
//	draining N                 real servers draining
//	refuse ADDR | none         from now on the kernel refuses every write carrying ADDR
//	                           (kernel.ErrRefused), as it refuses an overlapping element
//	event NS/NAME REASON N     the Service got N Warning Events of REASON so far
func (sc *scenario) run(f []string) error {
	sc.t.Helper()
	switch f[0] {
	case "option":
		if sc.h != nil {
			return fmt.Errorf("options go before the first command that starts the syncer")
		}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			if err := sc.option(k, v); err != nil {
				return err
			}
		}
	case "apply":
		return sc.apply(f[1:])
	case "delete":
		if len(f) != 3 || f[1] != "service" {
			return fmt.Errorf("usage: delete service NS/NAME")
		}
		k, err := serviceKey(f[2])
		if err != nil {
			return err
		}
		h := sc.harness()
		h.src.DeleteService(k)
		h.tracker.ServiceChanged(k)
	case "sync":
		h := sc.harness()
		if len(f) > 1 && f[1] == "full" {
			h.tracker.AllChanged()
		}
		sc.fake.ResetOps()
		err := h.syncer.Sync()
		for try := 0; err != nil && sc.faulty != nil && try < 100; try++ {
			err = h.syncer.Sync() // an injected failure: the next sync retries what failed
		}
		checkRealServerCount(sc.t, h.syncer)
		return err
	case "clock":
		d, err := time.ParseDuration(strings.TrimPrefix(f[1], "+"))
		if err != nil {
			return err
		}
		sc.now = sc.now.Add(d)
	case "restart":
		old := sc.harness()
		sc.h = nil
		h := sc.harness()
		h.src, h.syncer.src = old.src, old.src
	case "kernel":
		return sc.kernelCmd(f[1:])
	case "cmp":
		if len(f) != 3 {
			return fmt.Errorf("usage: cmp PART FILE")
		}
		sc.cmp(f[1], f[2])
	case "ops", "calls":
		if sc.real != nil || sc.faulty != nil {
			return nil // operations are counted by the fake only, and failed ones are not the script's
		}
		want := map[string]int{}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: %w", kv, err)
			}
			want[k] = n
		}
		got := sc.fake.Ops()
		if f[0] == "ops" {
			if got = mutations(got); !maps.Equal(got, want) {
				sc.errorf("ops %v, want %v", got, want)
			}
			return nil
		}
		for k, n := range want {
			if got[k] != n {
				sc.errorf("calls %s = %d, want %d (all: %v)", k, got[k], n, got)
			}
		}
	case "weights":
		return sc.weights(f[1:])
	case "flows":
		if sc.real != nil {
			sc.t.Skip("flows: the conntrack table is the fake's here")
		}
		got, want := sc.fake.Flows(), f[1:]
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			sc.errorf("flows %v, want %v", got, want)
		}
	case "refuse":
		if len(f) != 2 {
			return fmt.Errorf("usage: refuse ADDR | none")
		}
		sc.refused = netip.Addr{}
		if f[1] != "none" {
			a, err := netip.ParseAddr(f[1])
			if err != nil {
				return err
			}
			sc.refused = a
		}
		sc.harness()
		sc.refuser.RefuseWhere(sc.refusing())
	case "event":
		if len(f) != 4 {
			return fmt.Errorf("usage: event NS/NAME REASON N")
		}
		k, err := serviceKey(f[1])
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(f[3])
		if err != nil {
			return err
		}
		if got := sc.events.count(k, f[2]); got != n {
			sc.errorf("%s: %d %s Events, want %d", k, got, f[2], n)
		}
	case "draining":
		if n, _ := strconv.Atoi(f[1]); sc.harness().syncer.Draining() != n {
			sc.errorf("draining %d, want %d", sc.harness().syncer.Draining(), n)
		}
	default:
		return fmt.Errorf("unknown command %q", f[0])
	}
	return nil
}

func (sc *scenario) option(k, v string) error {
	var set func(*Options)
	switch k {
	case "graceful", "syncPeriod":
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		set = func(o *Options) {
			if k == "graceful" {
				o.GracefulTimeout = d
			} else {
				o.SyncPeriod = d
			}
		}
	case "checkEvery":
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		set = func(o *Options) { o.CheckEvery = n }
	case "exclude":
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return err
		}
		set = func(o *Options) { o.ExcludeCIDRs = append(o.ExcludeCIDRs, p) }
	default:
		return fmt.Errorf("unknown option %q", k)
	}
	sc.opts = append(sc.opts, set)
	return nil
}

// apply loads the objects of the named files and marks their Services changed.
func (sc *scenario) apply(names []string) error {
	h := sc.harness()
	for _, name := range names {
		text, ok := sc.files[name]
		if !ok {
			return fmt.Errorf("no file %q in the archive", name)
		}
		seen := source.NewStaticSource()
		if _, err := source.LoadObjects(strings.NewReader(*text), seen, testNode); err != nil {
			return err
		}
		if _, err := source.LoadObjects(strings.NewReader(*text), h.src, testNode); err != nil {
			return err
		}
		for _, k := range seen.ServiceKeys() {
			h.tracker.ServiceChanged(k)
		}
		if seen.Node() != nil {
			h.tracker.AllChanged()
		}
	}
	return nil
}

// kernelCmd makes drift:
//
//	kernel add-vs PROTO VIP:PORT SCHED     a virtual server (someone else's, or a leftover)
//	kernel del-vs PROTO VIP:PORT | all     ipvsadm -D / -C
//	kernel set-weight PROTO VIP:PORT RS:PORT W
//	kernel set-conns PROTO VIP:PORT RS:PORT ACTIVE INACTIVE
//	kernel bind ADDR | kernel unbind ADDR  on kube-ipvs0
//	kernel flush-set NAME                  ipset flush
//	kernel flush-rules                     our iptables rules gone (IPv4)
//	kernel add-flow ORIGDST REPLYSRC       a UDP conntrack flow
//	kernel load FILE                       the state FILE shows (Fake.Dump's format), as a previous run left it
func (sc *scenario) kernelCmd(f []string) error {
	if len(f) == 2 && f[0] == "load" {
		text, ok := sc.files[f[1]]
		if !ok {
			return fmt.Errorf("no file %q in the archive", f[1])
		}
		if sc.real != nil {
			return sc.real.load(sc.t, *text)
		}
		return sc.fake.Load(*text)
	}
	if sc.real != nil {
		return sc.real.drift(sc.t, f)
	}
	fk := sc.fake
	vsKey := func(proto, vip string) (kernel.VSKey, error) {
		ap, err := netip.ParseAddrPort(vip)
		if err != nil {
			return kernel.VSKey{}, err
		}
		return kernel.VSKey{Protocol: protocol(proto), Address: ap.Addr(), Port: ap.Port()}, nil
	}
	if len(f) == 0 {
		return fmt.Errorf("kernel: what?")
	}
	switch f[0] {
	case "add-vs", "del-vs", "set-weight", "set-conns":
		if len(f) == 2 && f[0] == "del-vs" && f[1] == "all" {
			vss, _ := fk.ListVirtualServers()
			for _, vs := range vss {
				_ = fk.DeleteVirtualServer(vs.VSKey)
			}
			return nil
		}
		if len(f) < 3 {
			return fmt.Errorf("kernel %s PROTO VIP:PORT ...", f[0])
		}
		key, err := vsKey(f[1], f[2])
		if err != nil {
			return err
		}
		switch f[0] {
		case "add-vs":
			_ = fk.EnsureDummy("kube-ipvs0")
			return fk.AddVirtualServer(kernel.VirtualServer{VSKey: key, VSSettings: kernel.VSSettings{Scheduler: f[3]}})
		case "del-vs":
			return fk.DeleteVirtualServer(key)
		case "set-weight":
			rs, err := netip.ParseAddrPort(f[3])
			if err != nil {
				return err
			}
			w, err := strconv.Atoi(f[4])
			if err != nil {
				return err
			}
			return fk.UpdateRealServer(key, kernel.RealServer{Address: rs.Addr(), Port: rs.Port(), Weight: int32(w)})
		default:
			rs, err := netip.ParseAddrPort(f[3])
			if err != nil {
				return err
			}
			a, err1 := strconv.Atoi(f[4])
			i, err2 := strconv.Atoi(f[5])
			if err1 != nil || err2 != nil {
				return fmt.Errorf("set-conns: counts")
			}
			fk.SetConnections(key, rs, a, i)
		}
	case "bind", "unbind":
		a, err := netip.ParseAddr(f[1])
		if err != nil {
			return err
		}
		if f[0] == "bind" {
			_ = fk.EnsureDummy("kube-ipvs0")
			return fk.BindAddress("kube-ipvs0", a)
		}
		return fk.UnbindAddress("kube-ipvs0", a)
	case "flush-set":
		fk.FlushSet(f[1])
	case "flush-rules":
		fk.RestoreText(kernel.IPv4, "")
		return nil
	case "add-flow":
		o, err1 := netip.ParseAddrPort(f[1])
		r, err2 := netip.ParseAddrPort(f[2])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("add-flow ORIGDST REPLYSRC")
		}
		fk.AddFlow(o, r)
	default:
		return fmt.Errorf("unknown kernel command %q", f[0])
	}
	return nil
}

func protocol(p string) kernel.Protocol {
	switch strings.ToUpper(p) {
	case "UDP":
		return kernel.UDP
	case "SCTP":
		return kernel.SCTP
	}
	return kernel.TCP
}

// ipvs is the IPVS table the syncer programs.
func (sc *scenario) ipvs() kernel.IPVS {
	if sc.real != nil {
		return sc.real.k.IPVS
	}
	return sc.fake
}

// weights compares a virtual server's real servers and weights with want (RS=W).
func (sc *scenario) weights(f []string) error {
	if len(f) < 2 {
		return fmt.Errorf("usage: weights PROTO VIP:PORT [RS=W ...]")
	}
	ap, err := netip.ParseAddrPort(f[1])
	if err != nil {
		return err
	}
	rss, err := sc.ipvs().ListRealServers(kernel.VSKey{Protocol: protocol(f[0]), Address: ap.Addr(), Port: ap.Port()})
	if err != nil {
		return err
	}
	got := map[string]string{}
	for _, r := range rss {
		got[r.AddrPort().String()] = strconv.Itoa(int(r.Weight))
	}
	want := map[string]string{}
	for _, kv := range f[2:] {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	if !maps.Equal(got, want) {
		sc.errorf("weights of %s %s: %v, want %v", f[0], f[1], got, want)
	}
	return nil
}

// cmp compares a part of the fake's dump with the named file, or rewrites the file with
// -update.
func (sc *scenario) cmp(part, name string) {
	sc.t.Helper()
	var got string
	if sc.real != nil {
		got = sc.real.dump(sc.t, part)
	} else {
		got = dumpPart(sc.fake.Dump(), part)
	}
	want, ok := sc.files[name]
	if *update {
		if !ok {
			want = new(string)
			sc.files[name] = want
		}
		*want = got
		sc.updated = true
		return
	}
	if !ok {
		sc.errorf("no file %q in the archive (run with -update to create it)", name)
		return
	}
	if got != *want {
		sc.errorf("cmp %s %s: differs (run with -update after checking):\n%s", part, name, diffLines(got, *want))
	}
}

// dumpPart is one section of Fake.Dump: ipvs (the ipvsadm -Ln text), addrs, sets (the
// add lines of ipset save: the create lines are the same in every scenario), rules (the
// IPv4 iptables-save), or dump (all of it).
func dumpPart(dump, part string) string {
	sections := map[string]string{}
	name := "ipvs"
	for _, line := range strings.SplitAfter(dump, "\n") {
		if strings.HasPrefix(line, "# ") { // a section header of Fake.Dump
			name = "other"
			for prefix, n := range map[string]string{"# addresses on": "addrs", "# ipset save": "sets", "# IPv4 iptables-save": "rules"} {
				if strings.HasPrefix(line, prefix) {
					name = n
				}
			}
			continue
		}
		if name == "sets" && !strings.HasPrefix(line, "add ") {
			continue
		}
		sections[name] += line
	}
	if part == "dump" {
		return dump
	}
	return strings.TrimSpace(sections[part]) + "\n"
}

// serviceKey parses NS/NAME.
func serviceKey(s string) (proxier.ServiceKey, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		return proxier.ServiceKey{}, fmt.Errorf("%q: want NS/NAME", s)
	}
	return proxier.ServiceKey{Namespace: ns, Name: name}, nil
}

// txtarArchive is a parsed txtar file: the leading script, then named files in order.
type txtarArchive struct {
	script string
	names  []string
	files  map[string]*string
}

func parseTxtar(data []byte) txtarArchive {
	a := txtarArchive{files: map[string]*string{}}
	cur := &a.script
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			name := strings.TrimSpace(t[3 : len(t)-3])
			cur = new(string)
			a.names, a.files[name] = append(a.names, name), cur
			continue
		}
		*cur += line
	}
	return a
}

func (a txtarArchive) format() []byte {
	var b bytes.Buffer
	b.WriteString(a.script)
	names := a.names
	for n := range a.files {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		fmt.Fprintf(&b, "-- %s --\n%s", n, *a.files[n])
	}
	return b.Bytes()
}

package linux

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/ipvs"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

func ipvsadm(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ipvsadm", "-Ln").CombinedOutput()
	if err != nil {
		t.Fatalf("ipvsadm: %v: %s", err, out)
	}
	return string(out)
}

// TestIPVSReal: every operation against the kernel, checked with ipvsadm.
func TestIPVSReal(t *testing.T) {
	x := ipvsForTest(t)
	a := netip.MustParseAddr
	key := kernel.VSKey{Protocol: kernel.TCP, Address: a("10.96.0.1"), Port: 80}
	vs := kernel.VirtualServer{VSKey: key, VSSettings: kernel.VSSettings{Scheduler: "rr"}}
	must(t, writeVS(x, kernel.OpAdd, vs))
	if err := writeVS(x, kernel.OpAdd, vs); !errors.Is(err, kernel.ErrExist) {
		t.Errorf("second add: %v, want ErrExist", err)
	}
	vss, err := x.ListVirtualServers()
	must(t, err)
	if len(vss) != 1 || vss[0].Flags&kernel.FlagHashed == 0 || !vss[0].Equal(vs) {
		t.Errorf("listed %+v; want %+v with the kernel's HASHED bit (kubernetes#53801)", vss, vs)
	}
	rs := kernel.RealServer{Address: a("10.244.0.5"), Port: 8080, Weight: 1}
	must(t, writeRS(x, kernel.OpAdd, key, rs))
	// The batch contract: adding a present real server updates it.
	if err := writeRS(x, kernel.OpAdd, key, rs); err != nil {
		t.Errorf("second add rs: %v, want nil", err)
	}
	rs.Weight = 0
	must(t, writeRS(x, kernel.OpUpdate, key, rs))
	out := ipvsadm(t)
	if !strings.Contains(out, "TCP  10.96.0.1:80 rr") || !strings.Contains(out, "-> 10.244.0.5:8080              Masq    0") {
		t.Errorf("weight-0 update lost the forwarding method or weight:\n%s", out)
	}
	// In-place settings change: scheduler, persistence, sh flags.
	vs.Scheduler, vs.Flags, vs.Timeout = "sh", kernel.FlagPersistent|kernel.FlagSched1|kernel.FlagSched2, 600
	must(t, writeVS(x, kernel.OpUpdate, vs))
	out = ipvsadm(t)
	if !strings.Contains(out, "TCP  10.96.0.1:80 sh (sh-fallback,sh-port) persistent 600") {
		t.Errorf("update not shown as expected:\n%s", out)
	}
	vss, _ = x.ListVirtualServers()
	if len(vss) != 1 || !vss[0].Equal(vs) {
		t.Errorf("listed %+v after update, want %+v", vss, vs)
	}
	rss, err := x.ListRealServers(key)
	must(t, err)
	if len(rss) != 1 || rss[0].AddrPort() != rs.AddrPort() || rss[0].Weight != 0 {
		t.Errorf("real servers %+v", rss)
	}
	must(t, writeRS(x, kernel.OpDelete, key, rs))
	// ... and deleting an absent one succeeds.
	if err := writeRS(x, kernel.OpDelete, key, rs); err != nil {
		t.Errorf("second delete rs: %v, want nil", err)
	}
	if rss, _ := x.ListRealServers(key); len(rss) != 0 {
		t.Errorf("real servers %+v after the delete", rss)
	}
	// Every scheduler module of the kernel loads; an unknown one is refused.
	for i, s := range []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "mh"} {
		k := kernel.VSKey{Protocol: kernel.UDP, Address: a("10.96.1.1"), Port: uint16(1000 + i)}
		if err := writeVS(x, kernel.OpAdd, kernel.VirtualServer{VSKey: k, VSSettings: kernel.VSSettings{Scheduler: s}}); err != nil {
			t.Errorf("scheduler %s: %v", s, err)
		}
	}
	if err := writeVS(x, kernel.OpAdd, kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: a("10.96.1.2"), Port: 1}, VSSettings: kernel.VSSettings{Scheduler: "bogus"}}); err == nil {
		t.Error("unknown scheduler accepted")
	}
	// IPv6 and SCTP.
	k6 := kernel.VSKey{Protocol: kernel.SCTP, Address: a("fd00::1"), Port: 9}
	must(t, writeVS(x, kernel.OpAdd, kernel.VirtualServer{VSKey: k6, VSSettings: kernel.VSSettings{Scheduler: "rr"}}))
	must(t, writeRS(x, kernel.OpAdd, k6, kernel.RealServer{Address: a("fd00:244::5"), Port: 9, Weight: 1}))
	if out := ipvsadm(t); !strings.Contains(out, "SCTP [fd00::1]:9 rr") || !strings.Contains(out, "-> [fd00:244::5]:9") {
		t.Errorf("IPv6 SCTP not shown:\n%s", out)
	}
	must(t, x.SetTimeouts(900*time.Second, 120*time.Second, 300*time.Second))
	if out, _ := exec.Command("ipvsadm", "-L", "--timeout").CombinedOutput(); !strings.Contains(string(out), "900 120 300") {
		t.Errorf("timeouts: %s", out)
	}
	vss, _ = x.ListVirtualServers()
	for _, v := range vss {
		must(t, writeVS(x, kernel.OpDelete, v.VirtualServer))
	}
	// The batch contract: deleting an absent virtual server succeeds.
	if err := writeVS(x, kernel.OpDelete, kernel.VirtualServer{VSKey: key}); err != nil {
		t.Errorf("delete missing VS: %v, want nil", err)
	}
}

// TestDummyReal: kube-ipvs0 is created down, and holds /32 and /128 VIPs.
func TestDummyReal(t *testing.T) {
	kerneltest.RequireIPVS(t)
	x := &Addresses{}
	must(t, x.EnsureDummy("kube-ipvs0"))
	must(t, x.EnsureDummy("kube-ipvs0"))
	must(t, bind("kube-ipvs0", netip.MustParseAddr("10.96.0.1")))
	must(t, bind("kube-ipvs0", netip.MustParseAddr("fd00::1")))
	out, _ := exec.Command("ip", "addr", "show", "kube-ipvs0").CombinedOutput()
	s := string(out)
	if !strings.Contains(s, "dummy") && !strings.Contains(s, "kube-ipvs0") || !strings.Contains(s, "inet 10.96.0.1/32") || !strings.Contains(s, "inet6 fd00::1/128") || strings.Contains(s, ",UP") {
		t.Errorf("ip addr show kube-ipvs0:\n%s", s)
	}
	must(t, unbind("kube-ipvs0", netip.MustParseAddr("10.96.0.1")))
	must(t, unbind("kube-ipvs0", netip.MustParseAddr("fd00::1")))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSysctlsAndPreflightReal: on the VM kernel every module is found, the sysctls take,
// and conn_reuse_mode is left alone on 6.x (kubernetes#93297).
func TestSysctlsAndPreflightReal(t *testing.T) {
	kerneltest.RequireIPVS(t)
	r := Preflight{Rules: IptablesModules}.Check([]string{"rr", "lc", "sh", "sed", "mh"})
	if len(r.MissingModules) != 0 {
		t.Errorf("preflight: %s", r)
	}
	reuse, err := HostSysctls.Get("net/ipv4/vs/conn_reuse_mode")
	must(t, err)
	_, err = HostSysctls.Apply(SysctlConfig{StrictARP: true, ConntrackMaxPerCore: 32768, ConntrackMin: 131072, CPUs: 2})
	must(t, err)
	for key, want := range map[string]int{"net/ipv4/vs/conntrack": 1, "net/ipv4/vs/expire_nodest_conn": 1,
		"net/ipv4/vs/expire_quiescent_template": 1, "net/ipv4/ip_forward": 1, "net/ipv4/conf/all/arp_ignore": 1,
		"net/ipv4/conf/all/arp_announce": 2, "net/ipv4/vs/conn_reuse_mode": reuse} {
		if got, err := HostSysctls.Get(key); err != nil || got != want {
			t.Errorf("%s = %d (%v), want %d", key, got, err, want)
		}
	}
	if got, _ := HostSysctls.Get("net/netfilter/nf_conntrack_max"); got < 131072 {
		t.Errorf("nf_conntrack_max %d, want >= 131072", got)
	}
}

// TestIPVSDeadline: a call that never returns (moby/ipvs spins on EAGAIN when a reply is
// lost) times out, and the next call works on a new handle.
func TestIPVSDeadline(t *testing.T) {
	kerneltest.RequireIPVS(t)
	x, err := NewIPVS(200 * time.Millisecond)
	must(t, err)
	defer x.Close()
	block := make(chan struct{})
	defer close(block)
	err = x.do("stuck call", func(*ipvs.Handle) error { <-block; return nil })
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v, want ErrTimeout", err)
	}
	if _, err := x.ListVirtualServers(); err != nil {
		t.Errorf("after a timeout: %v", err)
	}
}

// ipvsForTest skips without IPVS, else returns a backend closed when the test ends.
func ipvsForTest(t *testing.T) *IPVS {
	t.Helper()
	kerneltest.RequireIPVS(t)
	x, err := NewIPVS(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// TestIPVSWriteBesideDump: a write goes through while a dump holds the read socket (a
// full sync's dump of 60,000 virtual servers takes seconds), and a dump while a write
// holds the write socket; the dump of every virtual server has a socket of its own, so
// a partial sync's read of one virtual server's real servers (a leaving endpoint's
// connections) and a lookup go through while it runs.
func TestIPVSWriteBesideDump(t *testing.T) {
	x := ipvsForTest(t)
	vs := kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("10.96.0.9"), Port: 80}, VSSettings: kernel.VSSettings{Scheduler: "rr"}}
	beside := func(held *ipvsSocket, call func() error) {
		t.Helper()
		held.mu.Lock()
		defer held.mu.Unlock()
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case err := <-done:
			must(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the call waited for the other socket")
		}
	}
	t.Cleanup(func() { _ = writeVS(x, kernel.OpDelete, vs) }) // also after a failure
	beside(&x.reads, func() error { return writeVS(x, kernel.OpAdd, vs) })
	beside(&x.listing, func() error { return writeVS(x, kernel.OpUpdate, vs) })
	beside(&x.reads, func() error { _, err := x.ListVirtualServers(); return err })
	beside(&x.listing, func() error { _, err := x.ListRealServers(vs.VSKey); return err })
	beside(&x.listing, func() error {
		found, err := x.LookupVirtualServers([]kernel.VSKey{vs.VSKey})
		if err == nil && (len(found) != 1 || !found[0].Equal(vs)) {
			err = fmt.Errorf("looked up %v, want %v", found, vs)
		}
		return err
	})
	beside(&x.writes, func() error {
		vss, err := x.ListVirtualServers()
		if err == nil && !slices.ContainsFunc(vss, func(d kernel.DumpedVS) bool { return d.Equal(vs) }) {
			err = fmt.Errorf("dumped %v, want %v among them", vss, vs)
		}
		return err
	})
}

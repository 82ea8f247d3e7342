package reconcile

import (
	"errors"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestScenariosRealKernel runs the scenario scripts against the VM's kernel: a contract
// test between kernel.Fake and Linux, since the unit tier trusts the fake. Where the two
// differ, the fake is wrong. Each script starts from a node with none of our state. A
// script that makes connections or conntrack flows by hand (`kernel set-conns`, `kernel
// add-flow`, `flows`) is skipped: the real kernel's counts come from real traffic, which
// TestRealPackets drives. `ops` and `calls` are the fake's counts of what the syncer
// asked for and are not checked here; `cmp` compares the same ipvsadm -Ln, address and
// ipset-add text, formatted from the real kernel's dumps.
func TestScenariosRealKernel(t *testing.T) {
	kerneltest.RequireIPVS(t)
	paths, err := filepath.Glob("testdata/scenarios/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	backend := testRulesBackend()
	k := linuxKernelFor(t, backend)
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			rk := &realKernel{k: k, backend: backend}
			rk.reset(t)
			runScenario(t, path, rk)
		})
	}
}

// realKernel is the node's kernel under a scenario, with the rules backend the syncer
// programs it with.
type realKernel struct {
	k       kernel.Kernel
	backend *proxier.RulesBackend
}

// reset removes what any scenario leaves: every virtual server (the VM is the test's),
// the rules of our chains, kube-ipvs0 and our sets.
func (r *realKernel) reset(t *testing.T) {
	t.Helper()
	if r.backend == proxier.RulesNftables {
		// Our tables, with their sets and chains (the node has no iptables or ipset).
		sh(t, `ipvsadm -C && { nft delete table ip ipvs-proxier 2>/dev/null; nft delete table ip6 ipvs-proxier 2>/dev/null;
ip link del kube-ipvs0 2>/dev/null; true; }`)
		return
	}
	// Flushing our chains drops every rule that names our sets (the jumps from the base
	// chains stay, and the next restore fills the chains again).
	sh(t, `ipvsadm -C && for x in iptables-nft iptables-legacy ip6tables-nft ip6tables-legacy; do for t in nat filter; do
  for c in $($x-save -t $t | sed -n 's/^:\(KUBE-[^ ]*\) .*/\1/p'); do $x -t $t -F $c; done; done; done &&
{ ip link del kube-ipvs0 2>/dev/null; true; }`)
	var names []string
	for _, s := range proxier.Sets([]kernel.Family{kernel.IPv4, kernel.IPv6}) {
		names = append(names, s.Name)
	}
	if _, err := linux.DestroySets(names); err != nil {
		t.Fatal(err)
	}
}

// dump formats one part of the real kernel's state as Fake.Dump does (see dumpPart).
func (r *realKernel) dump(t *testing.T, part string) string {
	t.Helper()
	switch part {
	case "ipvs":
		vss, err := r.k.IPVS.ListVirtualServers()
		if err != nil {
			t.Fatal(err)
		}
		rss := map[kernel.VSKey][]kernel.RealServer{}
		plain := make([]kernel.VirtualServer, len(vss))
		for i, vs := range vss {
			plain[i] = vs.VirtualServer
			if rss[vs.VSKey], err = r.k.IPVS.ListRealServers(vs.VSKey); err != nil {
				t.Fatal(err)
			}
		}
		return strings.TrimSpace(kernel.FormatIPVS(plain, rss)) + "\n"
	case "addrs":
		addrs, err := r.k.Addresses.ListAddresses("kube-ipvs0")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(kernel.FormatAddresses("kube-ipvs0", addrs)) + "\n"
	case "sets":
		var sets []kernel.Set
		members := map[string][]kernel.SetEntry{}
		for _, s := range proxier.Sets([]kernel.Family{kernel.IPv4, kernel.IPv6}) {
			es, err := r.k.Sets.ListEntries(s.Name)
			if errors.Is(err, kernel.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			sets, members[s.Name] = append(sets, s), es
		}
		slices.SortFunc(sets, func(a, b kernel.Set) int { return strings.Compare(a.Name, b.Name) })
		return dumpPart("# ipset save\n"+kernel.FormatSets(sets, members), "sets")
	}
	t.Skipf("cmp %s: only ipvs, addrs and sets are read from the real kernel", part)
	return ""
}

// load writes the state of text (Fake.Dump's format) into the real kernel: virtual and
// real servers, kube-ipvs0's addresses and the members of our sets. Rules are not
// loaded (the next sync restores them whole).
func (r *realKernel) load(t *testing.T, text string) error {
	t.Helper()
	f := kernel.NewFake()
	if err := f.Load(text); err != nil {
		return err
	}
	vss, _ := f.ListVirtualServers()
	var rsOps []kernel.RealServerOp
	vsOps := make([]kernel.VirtualServerOp, len(vss))
	for i, vs := range vss {
		vs.Flags &= kernel.OwnFlags
		vsOps[i] = kernel.VirtualServerOp{VS: vs.VirtualServer}
	}
	if err := errors.Join(r.k.IPVS.WriteVirtualServers(vsOps)...); err != nil {
		return err
	}
	for _, vs := range vss {
		rss, _ := f.ListRealServers(vs.VSKey)
		for _, rs := range rss {
			rsOps = append(rsOps, kernel.RealServerOp{VS: vs.VSKey, RS: rs})
		}
	}
	if err := errors.Join(r.k.IPVS.WriteRealServers(rsOps)...); err != nil {
		return err
	}
	if err := r.k.Addresses.EnsureDummy("kube-ipvs0"); err != nil {
		return err
	}
	addrs, _ := f.ListAddresses("kube-ipvs0")
	var addrOps []kernel.AddressOp
	for _, a := range addrs {
		addrOps = append(addrOps, kernel.AddressOp{Addr: a})
	}
	if err := errors.Join(r.k.Addresses.WriteAddresses("kube-ipvs0", addrOps)...); err != nil {
		return err
	}
	var setOps []kernel.SetOp
	for _, s := range proxier.Sets([]kernel.Family{kernel.IPv4, kernel.IPv6}) {
		es, err := f.ListEntries(s.Name)
		if err != nil {
			continue // not in the text
		}
		if err := r.k.Sets.EnsureSet(s); err != nil {
			return err
		}
		for _, e := range es {
			setOps = append(setOps, kernel.SetOp{Set: s.Name, Entry: e})
		}
	}
	return errors.Join(r.k.Sets.WriteEntries(setOps)...)
}

// drift is kernelCmd on the real kernel, made as an operator would, with ipvsadm, ip,
// ipset and iptables.
func (r *realKernel) drift(t *testing.T, f []string) error {
	t.Helper()
	vs := func(proto, vip string) string {
		flag := map[string]string{"TCP": "-t", "UDP": "-u", "SCTP": "--sctp-service"}[strings.ToUpper(proto)]
		return flag + " " + vip
	}
	switch {
	case len(f) == 2 && f[0] == "del-vs" && f[1] == "all":
		sh(t, "ipvsadm -C")
	case len(f) == 3 && f[0] == "del-vs":
		sh(t, "ipvsadm -D "+vs(f[1], f[2]))
	case len(f) == 4 && f[0] == "add-vs":
		sh(t, "ipvsadm -A "+vs(f[1], f[2])+" -s "+f[3])
	case len(f) == 5 && f[0] == "set-weight":
		sh(t, "ipvsadm -e "+vs(f[1], f[2])+" -r "+f[3]+" -m -w "+f[4])
	case len(f) == 2 && (f[0] == "bind" || f[0] == "unbind"):
		a, err := netip.ParseAddr(f[1])
		if err != nil {
			return err
		}
		op := map[string]string{"bind": "add", "unbind": "del"}[f[0]]
		sh(t, "{ ip link show kube-ipvs0 >/dev/null 2>&1 || ip link add kube-ipvs0 type dummy; } && ip addr "+op+" "+netip.PrefixFrom(a, a.BitLen()).String()+" dev kube-ipvs0")
	case len(f) == 2 && f[0] == "flush-set":
		sh(t, rulesView{r.backend}.flushCmd(f[1]))
	case len(f) == 1 && f[0] == "flush-rules" && r.backend == proxier.RulesNftables:
		sh(t, `for c in $(nft list chains ip ipvs-proxier | sed -n 's/^\tchain \([^ ]*\) .*/\1/p'); do nft flush chain ip ipvs-proxier $c; done`)
	case len(f) == 1 && f[0] == "flush-rules":
		sh(t, `for c in $(iptables-save -t nat | sed -n 's/^:\(KUBE-[^ ]*\) .*/\1/p'); do iptables -t nat -F $c; done`)
	case f[0] == "set-conns" || f[0] == "add-flow":
		t.Skipf("kernel %s: the real kernel's connections come from real traffic (TestRealPackets)", f[0])
	default:
		t.Fatalf("kernel %v: not a drift command the real kernel run knows", f)
	}
	return nil
}

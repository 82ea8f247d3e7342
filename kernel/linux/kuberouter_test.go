package linux

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

func TestIsKubeRouterMasquerade(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       bool
	}{
		{"masquerade-all", `-A POSTROUTING -m ipvs --ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment "" -j SNAT --to-source 192.168.1.10`, true},
		{"as iptables-save prints it (no --ipvs)", `-A POSTROUTING -m ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment "" -j SNAT --to-source 192.168.100.1 --random-fully`, true},
		{"random-fully", `-A POSTROUTING -m ipvs --ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment "" -j SNAT --to-source 192.168.1.10 --random-fully`, true},
		{"pod CIDR", `-A POSTROUTING ! -s 10.244.0.0/24 ! -d 10.244.0.0/24 -m ipvs --ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment "" -j SNAT --to-source 192.168.1.10 --random-fully`, true},
		{"IPv6", `-A POSTROUTING -m ipvs --ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment "" -j SNAT --to-source fd00::10`, true},
		{"older MASQUERADE", `-A POSTROUTING -m ipvs --ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment "" -j MASQUERADE`, true},
		{"another comment", `-A POSTROUTING -m ipvs --ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment "mine" -j SNAT --to-source 192.168.1.10`, false},
		{"no ipvs match", `-A POSTROUTING -m comment --comment "" -j SNAT --to-source 192.168.1.10`, false},
		{"another chain", `-A MY-POSTROUTING -m ipvs --ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment "" -j SNAT --to-source 192.168.1.10`, false},
		{"more matches", `-A POSTROUTING -o eth0 -m ipvs --ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment "" -j SNAT --to-source 192.168.1.10`, false},
		{"different CIDRs", `-A POSTROUTING ! -s 10.244.0.0/24 ! -d 10.0.0.0/8 -m ipvs --ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment "" -j SNAT --to-source 192.168.1.10`, false},
		{"hairpin jump", `-A POSTROUTING -m ipvs --vdir ORIGINAL -j KUBE-ROUTER-HAIRPIN`, false},
		{"a port range", `-A POSTROUTING -m ipvs --ipvs --vdir ORIGINAL --vmethod MASQ -m comment --comment "" -j SNAT --to-source 192.168.1.10:1000-2000`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsKubeRouterMasquerade(tc.line); got != tc.want {
				t.Errorf("IsKubeRouterMasquerade(%s) = %v, want %v", tc.line, got, tc.want)
			}
		})
	}
}

// TestKubeRouterCleanupReal: kube-router's chains with the jumps to them, its
// masquerade rule, its ipsets of both families, its policy rule and table-78 route go;
// look-alikes that are not kube-router's stay; a second run removes nothing.
func TestKubeRouterCleanupReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	ipt := NewIptables(nil)
	bin := "iptables-" + ipt.Mode()
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := execOut(name, args...); err != nil {
			t.Fatalf("%s %v: %s %v", name, args, out, err)
		}
	}
	for _, s := range [][]string{
		{"kube-router-local-ips", "hash:ip"}, {"kube-router-svip", "hash:ip"}, {"kube-router-svip-prt", "hash:ip,port"},
		{"my-svip", "hash:ip"}, // a decoy
	} {
		run("ipset", "create", s[0], s[1], "timeout", "0")
		run("ipset", "create", "inet6:"+s[0], s[1], "family", "inet6", "timeout", "0")
	}
	// kube-router's filter chain as setupIpvsFirewall writes it, and a look-alike.
	for _, args := range [][]string{
		{"-N", "KUBE-ROUTER-SERVICES"},
		{"-A", "KUBE-ROUTER-SERVICES", "-m", "comment", "--comment", "allow input traffic to ipvs services", "-m", "set", "--match-set", "kube-router-svip-prt", "dst,dst", "-j", "ACCEPT"},
		{"-A", "KUBE-ROUTER-SERVICES", "-m", "comment", "--comment", "reject all unexpected traffic to service IPs", "-m", "set", "!", "--match-set", "kube-router-local-ips", "dst", "-j", "REJECT", "--reject-with", "icmp-port-unreachable"},
		{"-I", "INPUT", "1", "-m", "comment", "--comment", "kube-router netpol", "-m", "set", "--match-set", "kube-router-svip", "dst", "-j", "KUBE-ROUTER-SERVICES"},
		{"-N", "MY-SERVICES"}, {"-A", "MY-SERVICES", "-j", "ACCEPT"},
		{"-A", "INPUT", "-m", "set", "--match-set", "my-svip", "dst", "-j", "MY-SERVICES"},
		{"-t", "nat", "-N", "KUBE-ROUTER-HAIRPIN"},
		{"-t", "nat", "-A", "KUBE-ROUTER-HAIRPIN", "-s", "10.244.0.5/32", "-d", "10.244.0.5/32", "-p", "tcp", "-j", "SNAT", "--to-source", "10.96.0.10"},
		// Decoys of the masquerade rule: no ipvs match, another comment.
		{"-t", "nat", "-A", "POSTROUTING", "-m", "comment", "--comment", "", "-j", "SNAT", "--to-source", "10.0.0.1"},
		{"-t", "nat", "-A", "POSTROUTING", "-m", "comment", "--comment", "mine", "-j", "SNAT", "--to-source", "10.0.0.1"},
	} {
		run(bin, append([]string{"-w"}, args...)...)
	}
	// The rules with `-m ipvs` need xt_ipvs, which only the VM tier has.
	withIPVS := true
	for _, args := range [][]string{
		{"-t", "nat", "-A", "POSTROUTING", "-m", "ipvs", "--vdir", "ORIGINAL", "-j", "KUBE-ROUTER-HAIRPIN"},
		{"-t", "nat", "-A", "POSTROUTING", "-m", "ipvs", "--ipvs", "--vdir", "ORIGINAL", "--vmethod", "MASQ", "-m", "comment", "--comment", "", "-j", "SNAT", "--to-source", "10.0.0.1", "--random-fully"},
		{"-t", "nat", "-A", "POSTROUTING", "!", "-s", "10.244.0.0/24", "!", "-d", "10.244.0.0/24", "-m", "ipvs", "--ipvs", "--vdir", "ORIGINAL", "--vmethod", "MASQ", "-m", "comment", "--comment", "", "-j", "SNAT", "--to-source", "10.0.0.1"},
		{"-t", "nat", "-A", "POSTROUTING", "-m", "ipvs", "--ipvs", "--vdir", "ORIGINAL", "--vmethod", "MASQ", "-m", "comment", "--comment", "mine", "-j", "SNAT", "--to-source", "10.0.0.1"},
	} {
		if out, err := execOut(bin, append([]string{"-w"}, args...)...); err != nil {
			t.Logf("no xt_ipvs here, the -m ipvs rules are left to the VM tier: %s", out)
			withIPVS = false
			break
		}
	}
	t.Cleanup(func() {
		_, _ = ipt.RemoveChains(kernel.IPv4, map[string][]string{"filter": {"MY-SERVICES"}}, nil)
		_, _ = execOut(bin, "-w", "-t", "nat", "-F", "POSTROUTING")
		_, _ = execOut("ipset", "destroy")
	})
	// The policy rule and route, and look-alikes: another selector, another priority,
	// another route in table 78.
	for _, args := range [][]string{
		{"rule", "add", "prio", "32765", "from", "all", "lookup", "79"},
		{"rule", "add", "prio", "32765", "from", "10.1.0.0/16", "lookup", "79"},
		{"rule", "add", "prio", "32764", "from", "all", "lookup", "79"},
		{"route", "add", "local", "default", "dev", "lo", "table", "78"},
		{"route", "add", "local", "10.9.9.9", "dev", "lo", "table", "78"},
		{"-6", "rule", "add", "prio", "32765", "from", "all", "lookup", "79"},
		{"-6", "route", "add", "local", "default", "dev", "lo", "table", "78"},
	} {
		run("ip", args...)
	}
	t.Cleanup(func() {
		_, _ = execOut("ip", "rule", "del", "prio", "32765", "from", "10.1.0.0/16", "lookup", "79")
		_, _ = execOut("ip", "rule", "del", "prio", "32764", "from", "all", "lookup", "79")
		_, _ = execOut("ip", "route", "flush", "table", "78")
	})

	n, err := ipt.RemoveChains(kernel.IPv4, KubeRouterChains, nil)
	if err != nil || n != 2 {
		t.Errorf("chains removed: %d (want 2), %v", n, err)
	}
	masq, err := ipt.RemoveKubeRouterMasquerade(kernel.IPv4)
	if want := map[bool]int{true: 2, false: 0}[withIPVS]; err != nil || masq != want {
		t.Errorf("masquerade rules removed: %d (want %d), %v", masq, want, err)
	}
	sets, err := DestroySets(KubeRouterSets)
	if err != nil || sets != 6 {
		t.Errorf("sets destroyed: %d (want 6), %v", sets, err)
	}
	routes, err := RemoveKubeRouterRoutes()
	if err != nil || routes != 4 {
		t.Errorf("rules and routes removed: %d (want 4), %v", routes, err)
	}

	save, _ := execOut(bin + "-save")
	for _, gone := range []string{"KUBE-ROUTER", "kube-router-svip", "--vmethod MASQ -m comment --comment \"\" -j SNAT --to-source 10.0.0.1"} {
		if strings.Contains(save, gone) {
			t.Errorf("%q left:\n%s", gone, save)
		}
	}
	stay := []string{":MY-SERVICES", "-A INPUT -m set --match-set my-svip dst -j MY-SERVICES",
		`-A POSTROUTING -m comment --comment "" -j SNAT --to-source 10.0.0.1`, `--comment mine -j SNAT --to-source 10.0.0.1`}
	if withIPVS {
		stay = append(stay, `--vmethod MASQ -m comment --comment mine -j SNAT`)
	}
	for _, want := range stay {
		if !strings.Contains(save, want) {
			t.Errorf("%q, not kube-router's, removed:\n%s", want, save)
		}
	}
	if out, _ := execOut("ipset", "list", "-n"); strings.Contains(out, "kube-router") || !strings.Contains(out, "my-svip") || !strings.Contains(out, "inet6:my-svip") {
		t.Errorf("sets after cleanup:\n%s", out)
	}
	rules, _ := execOut("ip", "rule")
	rules6, _ := execOut("ip", "-6", "rule")
	if strings.Contains(rules, "32765:\tfrom all lookup 79") || !strings.Contains(rules, "from 10.1.0.0/16 lookup 79") ||
		!strings.Contains(rules, "32764:\tfrom all lookup 79") || strings.Contains(rules6, "lookup 79") {
		t.Errorf("ip rules after cleanup:\n%s\n%s", rules, rules6)
	}
	t78, _ := execOut("ip", "route", "show", "table", "78")
	t78v6, _ := execOut("ip", "-6", "route", "show", "table", "78")
	if strings.Contains(t78, "default") || !strings.Contains(t78, "local 10.9.9.9 dev lo") || strings.Contains(t78v6, "default") {
		t.Errorf("table 78 after cleanup:\n%s\n%s", t78, t78v6)
	}

	// A second run finds nothing.
	n, err1 := ipt.RemoveChains(kernel.IPv4, KubeRouterChains, nil)
	masq, err2 := ipt.RemoveKubeRouterMasquerade(kernel.IPv4)
	sets, err3 := DestroySets(KubeRouterSets)
	routes, err4 := RemoveKubeRouterRoutes()
	if n+masq+sets+routes != 0 || err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		t.Errorf("second run removed %d %d %d %d: %v %v %v %v", n, masq, sets, routes, err1, err2, err3, err4)
	}
	if addrs, err := KubeRouterAddresses(); len(addrs) != 0 || err != nil {
		t.Errorf("no kube-dummy-if: %v, %v", addrs, err)
	}
}

// TestKeepLocalRoutesReal: an address bound on two interfaces, whose local route
// kube-router's `ip route replace` moved to its interface, keeps a local route when
// that interface goes (veth pairs stand in for the dummies, which this host lacks). In
// IPv6 the replace leaves the address's own route, and nothing is added.
func TestKeepLocalRoutesReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	for _, fam := range []struct {
		flag, addr, plen string
		added            int
	}{{"-4", "10.96.7.10", "32", 1}, {"-6", "fd00:96::7:10", "128", 0}} {
		t.Run(fam.flag, func(t *testing.T) {
			run := func(args ...string) string {
				t.Helper()
				out, err := execOut("ip", args...)
				if err != nil {
					t.Fatalf("ip %v: %s %v", args, out, err)
				}
				return out
			}
			for _, l := range []string{"krt", "ours"} {
				run("link", "add", l, "type", "veth", "peer", "name", l+"-p")
				run("link", "set", l, "up")
				run("link", "set", l+"-p", "up")
			}
			t.Cleanup(func() { _, _ = execOut("ip", "link", "del", "ours"); _, _ = execOut("ip", "link", "del", "krt") })
			// Ours bound first, then kube-router's, whose replace takes the route.
			run(fam.flag, "addr", "add", fam.addr+"/"+fam.plen, "dev", "ours", "nodad")
			run(fam.flag, "addr", "add", fam.addr+"/"+fam.plen, "dev", "krt", "nodad")
			run(fam.flag, "route", "replace", "local", fam.addr, "dev", "krt", "table", "local")
			added, err := KeepLocalRoutes("krt", "ours", []netip.Addr{mustAddr(t, fam.addr)})
			if err != nil || added != fam.added {
				t.Fatalf("added %d (want %d): %v", added, fam.added, err)
			}
			again, err := KeepLocalRoutes("krt", "ours", []netip.Addr{mustAddr(t, fam.addr)})
			if err != nil || again != 0 {
				t.Errorf("second run added %d: %v", again, err)
			}
			run("link", "del", "krt")
			routes, err := netlink.RouteGet(mustAddr(t, fam.addr).AsSlice())
			if err != nil || len(routes) == 0 || routes[0].Type != 2 /* RTN_LOCAL */ {
				t.Errorf("%s not local after its other interface went: %v %v\n%s", fam.addr, routes, err, run(fam.flag, "route", "show", "table", "local"))
			}
			// The route left is the kernel's own: deleting the address takes it.
			run(fam.flag, "addr", "del", fam.addr+"/"+fam.plen, "dev", "ours")
			if out := run(fam.flag, "route", "show", "table", "local"); strings.Contains(out, fam.addr+" ") {
				t.Errorf("a local route outlived its address:\n%s", out)
			}
		})
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestKubeRouterNotDummyReal: an interface named kube-dummy-if that is not a dummy is
// refused, its addresses not read.
func TestKubeRouterNotDummyReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	if out, err := execOut("ip", "link", "add", KubeRouterDummy, "type", "veth", "peer", "name", "krt-peer"); err != nil {
		t.Fatal(out, err)
	}
	if addrs, err := KubeRouterAddresses(); err == nil || addrs != nil {
		t.Errorf("a veth named %s: %v, %v; want it refused", KubeRouterDummy, addrs, err)
	}
	if out, err := execOut("ip", "link", "del", KubeRouterDummy); err != nil {
		t.Fatal(out, err)
	}
}

// TestKubeRouterAddressesReal: kube-dummy-if's addresses are read from the dummy, and
// the dummy is deleted. It needs the dummy module (the VM tier).
func TestKubeRouterAddressesReal(t *testing.T) {
	kerneltest.RequireIPVS(t)
	if out, err := execOut("ip", "link", "add", KubeRouterDummy, "type", "dummy"); err != nil {
		t.Fatal(out, err)
	}
	t.Cleanup(func() { _, _ = execOut("ip", "link", "del", KubeRouterDummy) })
	for _, a := range []string{"10.96.0.10/32", "fd00:96::10/128"} {
		if out, err := execOut("ip", "addr", "add", a, "dev", KubeRouterDummy); err != nil {
			t.Fatal(out, err)
		}
	}
	addrs, err := KubeRouterAddresses()
	if err != nil || len(addrs) != 2 {
		t.Errorf("addresses of %s: %v, %v", KubeRouterDummy, addrs, err)
	}
	if deleted, err := DeleteDummy(KubeRouterDummy); !deleted || err != nil {
		t.Errorf("delete %s: %v, %v", KubeRouterDummy, deleted, err)
	}
}

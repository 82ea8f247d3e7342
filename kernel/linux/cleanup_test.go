package linux

import (
	"slices"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestCleanupReal: our chains, the jumps to them, the iptables-mode leftovers when asked,
// and our sets go; another program's chain and rule stay; a second run is a no-op.
func TestCleanupReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	var all []string
	for _, cs := range proxier.RuleChains {
		all = append(all, cs...)
	}
	chains := proxier.RuleChains
	ipt := NewIptables(all)
	sets := proxier.Sets([]kernel.Family{kernel.IPv4})
	for _, s := range sets {
		if err := (&IPSets{}).EnsureSet(s); err != nil {
			t.Fatal(err)
		}
	}
	cfg := proxier.Config{}.WithDefaults()
	if err := ipt.restoreText(kernel.IPv4, proxier.Rules(&cfg, kernel.IPv4, nil).String()); err != nil {
		t.Fatal(err)
	}
	bin := "iptables-" + ipt.Mode()
	t.Cleanup(func() { // leave the netns as other tests expect it
		_, _ = ipt.RemoveChains(kernel.IPv4, map[string][]string{"filter": {"OTHER", "KUBE-FIREWALL"}}, nil)
	})
	// kube-proxy iptables-mode leftovers, and another program's chain with a jump and a rule.
	for _, args := range [][]string{
		{"-t", "nat", "-N", "KUBE-SVC-ABCDEF"}, {"-t", "nat", "-N", "KUBE-SEP-123456"},
		{"-t", "nat", "-A", "KUBE-SVC-ABCDEF", "-j", "KUBE-SEP-123456"}, {"-t", "nat", "-N", "KUBE-NODEPORTS"},
		{"-t", "nat", "-A", "KUBE-SERVICES", "-j", "KUBE-SVC-ABCDEF"},
		{"-N", "OTHER"}, {"-A", "OTHER", "-j", "ACCEPT"}, {"-A", "INPUT", "-j", "OTHER"},
		{"-N", "KUBE-FIREWALL"}, {"-A", "INPUT", "-j", "KUBE-FIREWALL"}, // kubelet's, never ours
	} {
		if out, err := execOut(bin, append([]string{"-w"}, args...)...); err != nil {
			t.Fatalf("%v: %s %v", args, out, err)
		}
	}
	save := func() string {
		out, err := execOut(bin + "-save")
		if err != nil {
			t.Fatal(out, err)
		}
		return out
	}

	using, err := ipt.ChainsMatchingSets(kernel.IPv4, "KUBE-")
	if err != nil || !slices.Contains(using["nat"], "KUBE-SERVICES") || !slices.Contains(using["filter"], "KUBE-IPVS-FILTER") ||
		slices.Contains(using["filter"], "OTHER") || slices.Contains(using["nat"], "KUBE-SVC-ABCDEF") {
		t.Errorf("chains matching our sets: %v %v", using, err)
	}
	n, err := ipt.RemoveChains(kernel.IPv4, chains, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := save()
	if n != len(chains["nat"])+len(chains["filter"]) {
		t.Errorf("removed %d chains, want %d", n, len(chains["nat"])+len(chains["filter"]))
	}
	for _, c := range all {
		if c != "KUBE-SERVICES" && (strings.Contains(after, ":"+c+" ") || strings.Contains(after, "-j "+c)) {
			t.Errorf("chain %s or a jump to it left:\n%s", c, after)
		}
	}
	for _, want := range []string{":OTHER", "-A INPUT -j OTHER", "-A OTHER -j ACCEPT", ":KUBE-FIREWALL", "-A INPUT -j KUBE-FIREWALL", ":KUBE-SVC-ABCDEF"} {
		if !strings.Contains(after, want) {
			t.Errorf("without --iptables-mode-leftovers, %q must stay:\n%s", want, after)
		}
	}

	// The iptables-mode leftovers, with a filter KUBE-SERVICES REJECT as kube-proxy's
	// iptables mode writes for a Service without endpoints.
	for _, args := range [][]string{{"-N", "KUBE-SERVICES"}, {"-A", "KUBE-SERVICES", "-d", "10.96.0.9/32", "-p", "tcp", "-j", "REJECT"},
		{"-A", "OUTPUT", "-j", "KUBE-SERVICES"}} {
		if out, err := execOut(bin, append([]string{"-w"}, args...)...); err != nil {
			t.Fatalf("%v: %s %v", args, out, err)
		}
	}
	if n, err = ipt.RemoveChains(kernel.IPv4, IptablesModeChains, IptablesModePrefixes); err != nil || n != 4 {
		t.Errorf("leftovers: removed %d (want 4: KUBE-SVC-, KUBE-SEP-, nat KUBE-NODEPORTS, filter KUBE-SERVICES), %v", n, err)
	}
	after = save()
	for _, gone := range []string{"KUBE-SVC-ABCDEF", "KUBE-SEP-123456", "KUBE-NODEPORTS", "KUBE-SERVICES", "REJECT"} {
		if strings.Contains(after, gone) {
			t.Errorf("%s left:\n%s", gone, after)
		}
	}
	if !strings.Contains(after, ":KUBE-FIREWALL") || !strings.Contains(after, "-A INPUT -j OTHER") {
		t.Errorf("kubelet's or another program's chain removed:\n%s", after)
	}
	if n, err := ipt.RemoveChains(kernel.IPv4, IptablesModeChains, IptablesModePrefixes); n != 0 || err != nil {
		t.Errorf("second run: removed %d, %v", n, err)
	}

	var names []string
	for _, s := range sets {
		names = append(names, s.Name)
	}
	if n, err := DestroySets(names); err != nil || n != len(names) {
		t.Errorf("destroyed %d of %d sets: %v", n, len(names), err)
	}
	if out, _ := execOut("ipset", "list", "-n"); strings.Contains(out, "KUBE-") {
		t.Errorf("sets left: %s", out)
	}
	if n, err := DestroySets(names); err != nil || n != 0 {
		t.Errorf("second destroy: %d, %v", n, err)
	}
	if deleted, err := DeleteDummy("kube-ipvs0"); deleted || err != nil {
		t.Errorf("missing dummy: deleted %v, %v", deleted, err)
	}
}

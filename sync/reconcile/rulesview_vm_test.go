package reconcile

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// testRulesBackend is the rules backend the real-kernel tests run with:
// IPVS_PROXIER_TEST_RULES=nftables (e2e/vm/kernel-tests.sh boots a VM without xtables
// and ipset for it), else iptables.
func testRulesBackend() *proxier.RulesBackend {
	if os.Getenv("IPVS_PROXIER_TEST_RULES") == proxier.RulesNftables.Name {
		return proxier.RulesNftables
	}
	return proxier.RulesIptables
}

// linuxKernelFor is the VM's kernel behind the seam with the given rules backend.
func linuxKernelFor(t *testing.T, b *proxier.RulesBackend) kernel.Kernel {
	t.Helper()
	if b != proxier.RulesNftables {
		return linuxKernel(t)
	}
	k, x, err := linux.New(5e9, func() (kernel.Sets, kernel.Rules) { return linux.OpenNftables(proxier.NftTable) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return k
}

// rulesView reads the backend's rules and sets with its own tools, for the checks
// TestRealPackets makes on them.
type rulesView struct{ b *proxier.RulesBackend }

// chain is one of our IPv4 chains as the backend's listing prints it.
func (v rulesView) chain(t *testing.T, table, name string) string {
	if v.b == proxier.RulesNftables {
		return sh(t, "nft list chain ip "+proxier.NftTable+" "+name)
	}
	return sh(t, "iptables -t "+table+" -S "+name)
}

// has reports whether a chain's listing holds a rule: for iptables a line of `iptables
// -S` matching the regexp ipt, for nftables a line of `nft list chain` equal to nft.
func (v rulesView) has(t *testing.T, table, chain, ipt, nft string) bool {
	out := v.chain(t, table, chain)
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if v.b == proxier.RulesNftables && l == nft || v.b != proxier.RulesNftables && regexp.MustCompile("^"+ipt+"$").MatchString(l) {
			return true
		}
	}
	t.Logf("%s has no rule %q / %q:\n%s", chain, ipt, nft, out)
	return false
}

// sets is every set of ours with its members, in the backend's listing.
func (v rulesView) sets(t *testing.T) string {
	if v.b == proxier.RulesNftables {
		return sh(t, "nft list table ip "+proxier.NftTable)
	}
	return sh(t, "ipset save")
}

// members is one set's members, sorted, one per line.
func (v rulesView) members(t *testing.T, set string) string {
	if v.b == proxier.RulesNftables {
		return sh(t, "nft list set ip "+proxier.NftTable+" "+set+" | sed -n '/elements/,$p' | tr -d '{},' | sed 's/elements = //' | awk 'NF' | sort")
	}
	return sh(t, "ipset list "+set+" | sed -n '/^Members:/,$p' | sort")
}

// flush empties one set behind the syncer's back.
func (v rulesView) flush(t *testing.T, set string) { sh(t, v.flushCmd(set)) }

// flushCmd is the command that empties a set.
func (v rulesView) flushCmd(set string) string {
	if v.b != proxier.RulesNftables {
		return "ipset flush " + set
	}
	fam := "ip"
	if strings.HasPrefix(set, "KUBE-6-") {
		fam = "ip6"
	}
	return "nft flush set " + fam + " " + proxier.NftTable + " " + set
}

// xtablesModules are the modules the nftables backend must never need: ipset, the
// xtables core and matches, the iptables tables and nftables' xtables compat layer.
var xtablesModules = regexp.MustCompile(`^(ip_set\S*|x_tables|xt_\S+|ip6?_tables|ip6?table_\S+|ip6?t_\S+|nft_compat|ebtables|arp_tables) `)

// checkNoXtables fails t if one of xtablesModules is loaded, and, on the VM made without
// them (IPVS_PROXIER_TEST_NO_XTABLES=1), if an iptables or ipset binary exists.
func checkNoXtables(t *testing.T) {
	t.Helper()
	mods, err := os.ReadFile("/proc/modules")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(mods), "\n") {
		if xtablesModules.MatchString(l) {
			t.Errorf("module loaded: %s", strings.Fields(l)[0])
		}
	}
	if os.Getenv("IPVS_PROXIER_TEST_NO_XTABLES") != "1" {
		return
	}
	for _, b := range []string{"iptables", "iptables-nft", "iptables-legacy", "ipset", "xtables-nft-multi", "xtables-legacy-multi"} {
		if p, err := exec.LookPath(b); err == nil {
			t.Errorf("%s exists on this node: %s", b, p)
		}
	}
}

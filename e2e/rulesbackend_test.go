package e2e

import (
	"fmt"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// The tests that read sets do it through these, so the Service behaviour tests run with
// either rules backend (`make e2e-nftables` runs them with nftables).

// nftMode reports whether the daemons run with the nftables backend.
func nftMode() bool { return harness.RulesBackend() == "nftables" }

// setList is the node command that lists a set of ours with its members.
func setList(set string) string {
	if !nftMode() {
		return "ipset list " + set
	}
	return "nft list set " + nftSet(set)
}

// setFlush is the node command that empties a set of ours.
func setFlush(set string) string {
	if !nftMode() {
		return "ipset flush " + set
	}
	return "nft flush set " + nftSet(set)
}

// nftSet names a set of ours as nft does: its family's table, then its name.
func nftSet(set string) string {
	fam := "ip"
	if strings.HasPrefix(set, "KUBE-6-") {
		fam = "ip6"
	}
	return fam + " ipvs-proxier " + set
}

// member is a hash:ip,port member as setList prints it.
func member(ip, proto string, port int) string {
	if nftMode() {
		return fmt.Sprintf("%s . %s . %d", ip, proto, port)
	}
	return fmt.Sprintf("%s,%s:%d", ip, proto, port)
}

// checkRulesBackend fails the run unless each node's rules are where the backend puts
// them: with nftables, our table with its chains, and no set of ours in ipset.
func checkRulesBackend(nodes ...*harness.Node) error {
	if !nftMode() {
		return nil
	}
	for _, n := range nodes {
		out, err := n.MustExec("nft list table ip ipvs-proxier; echo ipsets: $(ipset list -n | grep -c '^KUBE-')")
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		if !strings.Contains(out, "chain KUBE-SERVICES {") || !strings.Contains(out, "ipsets: 0") {
			return fmt.Errorf("%s: the nftables backend is not what programs the node:\n%s", n.Name, out)
		}
	}
	return nil
}

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// adoptingKP in DP_PROXIES is kube-proxy's IPVS mode started on the IPVS state, dummy
// addresses and ipsets ours left: the rollback of docs/migration.md. On a wiped node its
// first sync adds every ipset entry with one `ipset add` process each (kube-proxy's
// pkg/proxy/ipvs/ipset.go, syncIPSetEntries), about 80 ms apiece in the emulated VM:
// ready after ~10 min at 1,000 Services (7,600 entries), ~5 h at 30,000 (228,000). Its
// first sync lists each set and adds or deletes only the difference, and gets, compares
// and fixes each virtual server and its real servers, so what it serves once synced is
// what it would have built itself; only the way there is shorter.
const adoptingKP = "ipvs-adopting"

// adoptSuffix ends the name of adoptingKP's rows.
const adoptSuffix = ", adopting ours' state"

// kubeProxyIPVS names kube-proxy's IPVS mode's rows (as the scale benchmark does).
const kubeProxyIPVS = "kube-proxy"

// adopting says whether the proxy named so starts on ours' state.
func adopting(name string) bool { return strings.HasSuffix(name, adoptSuffix) }

// handOver programs the node with ours, waits until it is ready, stops it and removes
// what kube-proxy's IPVS mode would not have made, so that kube-proxy adopts only what
// it would make itself: the iptables rules go (kube-proxy writes its own on its first
// sync; ours' extra rules would otherwise stay on the path), as do the sets kube-proxy
// does not have (unreferenced once the rules are gone). It returns what ours had
// programmed, and what the hand-over printed, for the row's notes.
func handOver(node *harness.Node, t targets, s settings, n int) (string, error) {
	if _, err := node.MustExec(benchkit.IPVSProxier.Start); err != nil {
		return "", fmt.Errorf("start ours: %w", err)
	}
	start := time.Now()
	if err := waitReady(node, benchkit.IPVSProxier, n, t, start.Add(s.budgetFor(n))); err != nil {
		return "", fmt.Errorf("ours not ready within %v: %w", s.budgetFor(n), err)
	}
	ours := fmt.Sprintf("ours ready after %v: %s", time.Since(start).Round(time.Second), progress(node))
	out, err := node.MustExec(handOverScript)
	if err != nil {
		return ours, fmt.Errorf("hand over: %w", err)
	}
	if out = strings.TrimSpace(out); out != "" {
		ours += "; the hand-over printed: " + out
	}
	return ours, nil
}

// handOverScript stops ours (it leaves the kernel state on SIGTERM) and waits for it to
// exit, then deletes every iptables rule and chain, and the sets only ours has (in both
// families' names), and flushes conntrack as Wipe does. Ours' other sets are kube-proxy's
// as they are: ours makes them with kube-proxy's maxelem while their members fit
// (proxier.SetCapacity), so its `ipset create ... -exist` accepts them. It prints what
// the destroys said, if anything.
const handOverScript = `p=$(cat /tmp/daemon.pid); kill $p; while kill -0 $p 2>/dev/null; do sleep 0.5; done; rm -f /tmp/daemon.pid
for t in nat filter mangle; do for c in iptables ip6tables; do $c -t $t -F; $c -t $t -X; done; done
for s in KUBE-NO-ENDPOINTS KUBE-EXTERNAL-NO-LOCAL-EP KUBE-SERVICE-IPS KUBE-6-NO-ENDPOINTS KUBE-6-EXTERNAL-NO-LOCAL-EP KUBE-6-SERVICE-IPS; do
  ipset list -n | grep -qx $s && ipset destroy $s 2>&1; done
conntrack -F >/dev/null 2>&1; true`

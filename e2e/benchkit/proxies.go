package benchkit

import (
	"slices"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// Proxy is a proxy a benchmark runs on its node: the command that starts it in the
// background and the file that then holds its PID.
type Proxy struct {
	Name, Start, PIDFile string
	// DataPath is where it programs a Service port, which decides what a benchmark
	// reads to see the port programmed.
	DataPath DataPath
	// ClusterSet names the set its rules match every ClusterIP port against
	// (SetMembers): ipset's, or the set of kube-proxy's nftables table.
	ClusterSet string
	// Metrics is the URL of its Prometheus metrics in the node, "" when it serves none.
	Metrics string
	// Caveat is what every table that shows the proxy must say of it, "" if nothing.
	Caveat string
}

// DataPath is where a proxy programs the Services in the kernel.
type DataPath int

const (
	// DataPathIPVS: an IPVS virtual server per Service port, a real server per
	// endpoint (ours, kube-proxy's IPVS mode, kube-router).
	DataPathIPVS DataPath = iota
	// DataPathKubeProxyNftables: kube-proxy's nftables mode, table ip kube-proxy.
	DataPathKubeProxyNftables
	// DataPathIptables: kube-proxy's iptables mode, chains per Service.
	DataPathIptables
)

// metricsURL is where ours and kube-proxy serve their metrics in the node.
const metricsURL = "http://127.0.0.1:10249/metrics"

// IPVSProxier is the daemon, started as the DaemonSet starts it.
var IPVSProxier = Proxy{Name: "ipvs-proxier", Start: "sh /start-daemon.sh", PIDFile: "/tmp/daemon.pid", ClusterSet: "KUBE-CLUSTER-IP", Metrics: metricsURL}

// IPVSProxierNftables is the daemon with its sets and rules in nftables
// (--rules-backend=nftables).
var IPVSProxierNftables = Proxy{Name: "ipvs-proxier nftables", Start: "sh /start-daemon.sh --rules-backend=nftables", PIDFile: "/tmp/daemon.pid", ClusterSet: "KUBE-CLUSTER-IP", Metrics: metricsURL}

// IPVSProxierRoutes is the daemon with the Service IPs as local routes rather than
// addresses on the dummy (--vip-local-routes).
var IPVSProxierRoutes = Proxy{Name: "ipvs-proxier routes", Start: "sh /start-daemon.sh --vip-local-routes", PIDFile: "/tmp/daemon.pid", ClusterSet: "KUBE-CLUSTER-IP", Metrics: metricsURL}

// Ours reports whether p is ipvs-proxier (in either rules backend).
func (p Proxy) Ours() bool { return p.PIDFile == IPVSProxier.PIDFile }

// Nftables reports whether p is ours keeping its sets in nftables rather than ipset.
func (p Proxy) Nftables() bool { return p.Name == IPVSProxierNftables.Name }

// SetMembers is a shell command that prints how many members p's sets hold: ipset's
// `add` lines, or the elements of our nftables tables or of kube-proxy's (each element
// ends in a comma or the closing brace of its `elements = { ... }`). With set, only
// that set's members of the workload's port (TCP 80: the ClusterIP check set holds one
// per ClusterIP port; kube-proxy's nftables cluster-ips set holds addresses, all counted).
func (p Proxy) SetMembers(set string) string {
	const countElements = `awk '/elements = \{/{e=1; n++} e{n+=gsub(/,/,"")} e&&/\}/{e=0} END{print n+0}'`
	switch {
	case p.Nftables():
		if set != "" {
			return "nft list set ip ipvs-proxier " + set + " 2>/dev/null | grep -oE ' tcp \\. 80([ ,]|$)' | wc -l"
		}
		return "for f in ip ip6; do nft list table $f ipvs-proxier 2>/dev/null; done | " + countElements
	case p.DataPath == DataPathKubeProxyNftables:
		if set != "" {
			return "nft list set ip kube-proxy " + set + " 2>/dev/null | " + countElements
		}
		return "for f in ip ip6; do nft list table $f kube-proxy 2>/dev/null; done | " + countElements
	}
	if set != "" {
		return "ipset list " + set + " 2>/dev/null | grep -cE ',tcp:80( |$)' || true"
	}
	return "ipset save | grep -c '^add ' || true"
}

// KubeProxy is stock kube-proxy v1.37 in mode (ipvs, iptables or nftables), with the
// node's stock config.conf otherwise.
func KubeProxy(mode string) Proxy {
	name := "kube-proxy"
	if mode != "ipvs" {
		name += " " + mode
	}
	p := Proxy{Name: name, Start: "sed 's/^mode: .*/mode: " + mode + "/' /" + harness.StockKubeProxyDir + "/config.conf > /tmp/kp.conf && " +
		"(/usr/local/bin/kube-proxy --config=/tmp/kp.conf >> /tmp/kube-proxy.log 2>&1 & echo $! > /tmp/kube-proxy.pid)", PIDFile: "/tmp/kube-proxy.pid",
		ClusterSet: "KUBE-CLUSTER-IP", Metrics: metricsURL}
	switch mode {
	case "nftables":
		// pkg/proxy/nftables/proxier.go: clusterIPsSet.
		p.DataPath, p.ClusterSet = DataPathKubeProxyNftables, "cluster-ips"
	case "iptables":
		p.DataPath, p.ClusterSet = DataPathIptables, ""
	}
	return p
}

// KubeRouter is kube-router's service proxy (harness.KubeRouterVersion, run as
// harness.KubeRouterCommand), started by the node's /start-kube-router.sh: the one way
// the benchmarks, the data-path benchmark, the migration test and the suite start it.
// Never beside ours: each of its syncs deletes every virtual server it did not make. Its
// rules match the Service ports in the kube-router-svip-prt ipset ("IP,tcp:PORT"); it
// serves no metrics (harness.KubeRouterCommand: --metrics-port=0).
var KubeRouter = Proxy{Name: "kube-router", Start: "sh /start-kube-router.sh", PIDFile: "/tmp/kube-router.pid", ClusterSet: "kube-router-svip-prt",
	Caveat: KubeRouterCaveat}

// KubeRouterCaveat is said wherever kube-router's numbers are shown.
const KubeRouterCaveat = "kube-router " + harness.KubeRouterVersion + ", the only version the Go module proxy serves, predates its externalIPs advisory GHSA-phqm-jgc3-qf8g (fixed in v2.8.0)"

// KubeRouterLabel names kube-router's series on a chart, its caveat in short.
const KubeRouterLabel = "kube-router " + harness.KubeRouterVersion + " (before GHSA-phqm-jgc3-qf8g's fix)"

// CSVNotes is the notes cell of a proxy's row in a benchmark's CSV: its caveat first,
// when it has one, so that a row copied into another CSV (scale-all.csv) keeps it.
func CSVNotes(proxy string, notes []string) string {
	if caveats := Caveats([]string{proxy}); len(caveats) > 0 {
		notes = append(caveats, notes...)
	}
	return strings.Join(notes, "; ")
}

// Caveats are the caveats of the proxies named, each once, in order.
func Caveats(names []string) []string {
	var out []string
	for _, n := range names {
		if n == KubeRouter.Name && !slices.Contains(out, KubeRouter.Caveat) {
			out = append(out, KubeRouter.Caveat)
		}
	}
	return out
}

// Wipe stops every proxy and removes what any of them made: IPVS, the dummy interfaces
// (ours, kube-router's kube-dummy-if), our local routes (--vip-local-routes),
// kube-router's policy rule and its tables 78 and 79 (kube-router-dsr, external_ip),
// iptables (both families; the legacy backend's tables too when their module is loaded),
// ipsets and nftables (kube-proxy's nftables mode, ours' nftables backend), and the
// connection-tracking table the previous one's traffic left: a fresh node for the next.
// Ours' log (/tmp/daemon.log, appended to by each start) goes too: the bench reads the
// first sync's and the critical Services' lines from it, which must be the next daemon's.
// Last, the IPVS modules loaded are reloaded (or, if they cannot be unloaded, the bench
// waits two minutes): the kernel keeps every deleted real server on a trash list for a
// minute or more and walks that list on every real-server add (ip_vs_trash_get_dest,
// net/netfilter/ipvs/ip_vs_ctl.c), so a proxy started right after the previous one's real
// servers were cleared wrote its own several times slower: the IPVS step of ours' cold
// start at 10,000 Services took 48.0 s right after the 5,000 step and 6.1 s two minutes
// later (`make bench-scale`; 123 s against 14 s at 30,000), and kube-proxy's step always
// came right after ours.
func Wipe(node *harness.Node) error {
	_, err := node.MustExec(`for p in /tmp/daemon.pid /tmp/kube-proxy.pid /tmp/kube-router.pid; do [ -f $p ] && kill $(cat $p) 2>/dev/null; rm -f $p; done; sleep 2
rm -f /tmp/daemon.log
ipvsadm -C; ip link del kube-ipvs0 2>/dev/null; ip route flush table local proto 210 2>/dev/null
ip link del kube-dummy-if 2>/dev/null
for f in -4 -6; do while ip $f rule del prio 32765 from all lookup 79 2>/dev/null; do :; done; ip $f route flush table 78 2>/dev/null; ip $f route flush table 79 2>/dev/null; done
for t in nat filter mangle; do for c in iptables ip6tables; do $c -t $t -F; $c -t $t -X; done; done
for c in iptables ip6tables; do [ -e /proc/net/${c%tables}_tables_names ] || continue; for t in nat filter mangle; do $c-legacy -t $t -F; $c-legacy -t $t -X; done; done 2>/dev/null
ipset destroy
command -v nft >/dev/null && for t in kube-proxy ipvs-proxier; do nft delete table ip $t; nft delete table ip6 $t; done 2>/dev/null
conntrack -F 2>/dev/null
if [ -d /sys/module/ip_vs ]; then
  mods=$(awk '$1 == "xt_ipvs" || $1 ~ /^ip_vs_/ {print $1}' /proc/modules)
  for m in $mods ip_vs; do modprobe -r $m; done 2>/dev/null
  if [ -d /sys/module/ip_vs ]; then sleep 120; else for m in ip_vs $mods; do modprobe $m; done; fi
fi; true`)
	return err
}

package main

import "github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"

// legacyKP in DP_PROXIES is kube-proxy's iptables mode with the legacy iptables backend
// (xtables-legacy-multi first on its PATH): at 30,000 Services its first sync through the
// nf_tables backend (iptables-nft-restore, which translates and sends rule by rule)
// had read 5 MB of its input after 9 min in the VM, hours for the whole; the legacy
// backend builds the table in user space and replaces it in one setsockopt, as in the
// published iptables-mode comparisons of kube-proxy's era before nf_tables.
const legacyKP = "iptables-legacy"

// legacySuffix ends the name of legacyKP's rows.
const legacySuffix = " (legacy backend)"

// legacyPath makes /tmp/legacy hold the iptables commands of the legacy backend, to be
// put first on a PATH.
const legacyPath = `mkdir -p /tmp/legacy && for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do ln -sf /usr/sbin/xtables-legacy-multi /tmp/legacy/$t; done && export PATH=/tmp/legacy:$PATH && `

// kubeProxyLegacy is kube-proxy's iptables mode on the legacy backend.
func kubeProxyLegacy() benchkit.Proxy {
	p := benchkit.KubeProxy("iptables")
	p.Name += legacySuffix
	p.Start = legacyPath + p.Start
	return p
}

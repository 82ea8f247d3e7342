package proxier

import "github.com/ipvs-proxier/ipvs-proxier/kernel"

// Base chains of our nftables table. Our table has its own hooks, so no rule goes into a
// chain someone else owns. The priorities are iptables' for the same tables (nat
// -100/100, filter 0), so IPVS (LOCAL_IN at 98, LOCAL_OUT at -99) sees packets in the
// same order as with the iptables backend.
const (
	nftNatPrerouting  = "nat-prerouting"
	nftNatOutput      = "nat-output"
	nftNatPostrouting = "nat-postrouting"
	nftFilterInput    = "filter-input"
	nftFilterForward  = "filter-forward"
	nftFilterOutput   = "filter-output"
	// nftFilterOutputPreIPVS runs before IPVS rewrites a local client's packet (LOCAL_OUT
	// at -99), so the out filter matches the VIP itself: nftables has no match on IPVS
	// connections, which iptables' `-m ipvs --vaddr` gives the iptables backend.
	nftFilterOutputPreIPVS = "filter-output-pre-ipvs"
	// chainFilterNodePort is the filter table's KUBE-NODE-PORT: one table holds both, so
	// the name differs.
	chainFilterNodePort = "KUBE-NODE-PORT-FILTER"
)

// nftBaseChains are our table's base chains: each one's type (iptables' table), hook
// and priority (nat -100 and 100 as dstnat and srcnat, filter 0; the pre-IPVS filter at
// mangle, -150).
var nftBaseChains = []kernel.Chain{
	{Name: nftNatPrerouting, Table: "nat", Hook: kernel.HookPrerouting, Priority: -100},
	{Name: nftNatOutput, Table: "nat", Hook: kernel.HookOutput, Priority: -100},
	{Name: nftNatPostrouting, Table: "nat", Hook: kernel.HookPostrouting, Priority: 100},
	{Name: nftFilterInput, Table: "filter", Hook: kernel.HookInput},
	{Name: nftFilterForward, Table: "filter", Hook: kernel.HookForward},
	{Name: nftFilterOutput, Table: "filter", Hook: kernel.HookOutput},
	{Name: nftFilterOutputPreIPVS, Table: "filter", Hook: kernel.HookOutput, Priority: -150},
}

// nftRegularChains are our table's other chains, by table.
var nftRegularChains = map[string][]string{
	"nat": {chainServices, chainLoadBalancer, chainNodePort, chainPostrouting, chainMarkMasq},
	"filter": {chainForward, chainFilterNodePort, chainProxyFirewall, chainSourceRangeFirewall,
		chainIPVSFilter, chainIPVSOutFilter, chainExternalNoLocal, chainClusterIPsCheck},
}

// nftChains is our table's chains in the order they are declared.
func nftChains() []kernel.Chain {
	out := append([]kernel.Chain(nil), nftBaseChains...)
	for _, table := range []string{"nat", "filter"} {
		for _, c := range nftRegularChains[table] {
			out = append(out, kernel.Chain{Name: c, Table: table})
		}
	}
	return out
}

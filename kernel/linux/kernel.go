package linux

import (
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// New opens every real backend. iptablesChains names the chains we own; a non-empty
// nftTable replaces the ipsets and iptables chains with our nftables table of that name
// (Nftables), which then holds both the sets and the rules.
func New(ipvsTimeout time.Duration, iptablesChains []string, nftTable string) (kernel.Kernel, *IPVS, error) {
	x, err := NewIPVS(ipvsTimeout)
	if err != nil {
		return kernel.Kernel{}, nil, err
	}
	k := kernel.Kernel{IPVS: x, Addresses: &Addresses{}, Conntrack: Conntrack{}}
	if nftTable != "" {
		// Not even the iptables flavour detection runs: it execs iptables.
		n := NewNftables(nftTable)
		k.Sets, k.Rules = n, n
	} else {
		k.Sets, k.Rules = &IPSets{}, NewIptables(iptablesChains)
	}
	return k, x, nil
}

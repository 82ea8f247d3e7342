package linux

import (
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// New opens every real backend: IPVS, the addresses and conntrack, then, once IPVS
// answers, the rules backend's sets and rules with open (OpenIptables, OpenNftables:
// the daemon's table of rules backends names one).
func New(ipvsTimeout time.Duration, open func() (kernel.Sets, kernel.Rules)) (kernel.Kernel, *IPVS, error) {
	x, err := NewIPVS(ipvsTimeout)
	if err != nil {
		return kernel.Kernel{}, nil, err
	}
	k := kernel.Kernel{IPVS: x, Addresses: &Addresses{}, Conntrack: Conntrack{}}
	k.Sets, k.Rules = open()
	return k, x, nil
}

// OpenIptables opens the iptables rules backend: ipsets, and iptables chains of which
// chains are ours.
func OpenIptables(chains []string) (kernel.Sets, kernel.Rules) {
	return &IPSets{}, NewIptables(chains)
}

// OpenNftables opens the nftables rules backend: our table of that name, which holds
// both the sets and the rules. Not even the iptables flavour detection runs: it execs
// iptables.
func OpenNftables(table string) (kernel.Sets, kernel.Rules) {
	n := NewNftables(table)
	return n, n
}

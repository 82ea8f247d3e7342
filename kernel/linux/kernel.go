package linux

import (
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// New opens every real backend. iptablesChains names the chains we own.
func New(ipvsTimeout time.Duration, iptablesChains []string) (kernel.Kernel, *IPVS, error) {
	x, err := NewIPVS(ipvsTimeout)
	if err != nil {
		return kernel.Kernel{}, nil, err
	}
	return kernel.Kernel{IPVS: x, Addresses: &Addresses{}, IPSets: &IPSets{}, Iptables: NewIptables(iptablesChains), Conntrack: Conntrack{}}, x, nil
}

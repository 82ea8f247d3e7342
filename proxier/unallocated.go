package proxier

import (
	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// chainClusterIPsCheck rejects new connections to addresses of the service CIDRs that
// no Service holds (a deleted Service's IP, a typo), which would otherwise leave the
// node towards its default route. kube-proxy's nftables mode has the same check, under
// the same name (pkg/proxy/nftables/proxier.go, cluster-ips-check; it drops, we reject
// as for a Service with no endpoints, so a client fails at once).
const chainClusterIPsCheck = "KUBE-CLUSTER-IPS-CHECK"

// allocatedMembers returns the KUBE-SERVICE-IPS entries of a Service: each valid
// ClusterIP, in its family's set.
func allocatedMembers(svc *v1.Service) []kernel.Member {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []kernel.Member
	for _, s := range ips {
		a, ok := ParseAddr(s)
		if !ok || a.IsUnspecified() {
			continue // "None", or garbage the API would not store
		}
		out = append(out, kernel.Member{Set: SetName(setServiceIPs, kernel.FamilyOf(a)), Entry: kernel.SetEntry{IP: a}})
	}
	return out
}

// renderClusterIPsCheck writes the check's rules for family f: one REJECT per service
// CIDR of the family, for new connections to an address no Service holds.
func renderClusterIPsCheck(cfg *Config, f kernel.Family, w func(format string, args ...any)) {
	for _, p := range cfg.ServiceCIDRs {
		if kernel.FamilyOf(p.Addr()) != f {
			continue
		}
		w(`-A %s -d %s -m set ! --match-set %s dst -m comment --comment "unallocated ClusterIP" -j REJECT`,
			chainClusterIPsCheck, p, SetName(setServiceIPs, f))
	}
}

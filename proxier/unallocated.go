package proxier

import "github.com/ipvs-proxier/ipvs-proxier/kernel"

// chainClusterIPsCheck rejects new connections to addresses of the service CIDRs that
// no Service holds (a deleted Service's IP, a typo), which would otherwise leave the
// node towards its default route. kube-proxy's nftables mode has the same check, under
// the same name (pkg/proxy/nftables/proxier.go, cluster-ips-check; it drops, we reject
// as for a Service with no endpoints, so a client fails at once).
const chainClusterIPsCheck = "KUBE-CLUSTER-IPS-CHECK"

// allocatedMembers returns the KUBE-SERVICE-IPS entries of a Service: each valid
// ClusterIP, in its family's set.
func allocatedMembers(svc *Service) []kernel.Member {
	ips := svc.clusterIPs
	if len(ips) == 0 && svc.clusterIP != "" {
		ips = []string{svc.clusterIP}
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

// clusterIPsCheck adds the check's rules: one reject per service CIDR of the family, for
// new connections to an address no Service holds.
func (b *rulesBuilder) clusterIPsCheck() {
	for _, p := range b.cfg.ServiceCIDRs {
		if kernel.FamilyOf(p.Addr()) != b.f {
			continue
		}
		b.add("filter", chainClusterIPsCheck, reject, kernel.IP{Net: p},
			kernel.Lookup{Set: SetName(setServiceIPs, b.f), Key: keyDst, Not: true}, comment("unallocated ClusterIP"))
	}
}

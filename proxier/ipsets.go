package proxier

import (
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// ipset names. The first group is kube-proxy's, with its types and entry formats, so
// `ipset list` reads the same to an operator (pkg/proxy/ipvs/ipset.go in Kubernetes).
const (
	setLoopBack            = "KUBE-LOOP-BACK"
	setClusterIP           = "KUBE-CLUSTER-IP"
	setExternalIP          = "KUBE-EXTERNAL-IP"
	setExternalIPLocal     = "KUBE-EXTERNAL-IP-LOCAL"
	setLoadBalancer        = "KUBE-LOAD-BALANCER"
	setLoadBalancerLocal   = "KUBE-LOAD-BALANCER-LOCAL"
	setLoadBalancerFW      = "KUBE-LOAD-BALANCER-FW"
	setLoadBalancerSrcCIDR = "KUBE-LOAD-BALANCER-SOURCE-CIDR"
	setLoadBalancerSrcIP   = "KUBE-LOAD-BALANCER-SOURCE-IP"
	setNodePortTCP         = "KUBE-NODE-PORT-TCP"
	setNodePortLocalTCP    = "KUBE-NODE-PORT-LOCAL-TCP"
	setNodePortUDP         = "KUBE-NODE-PORT-UDP"
	setNodePortLocalUDP    = "KUBE-NODE-PORT-LOCAL-UDP"
	setNodePortSCTP        = "KUBE-NODE-PORT-SCTP-HASH"
	setNodePortLocalSCTP   = "KUBE-NODE-PORT-LOCAL-SCTP-HASH"
	setHealthCheckNodePort = "KUBE-HEALTH-CHECK-NODE-PORT"
	setIPVSIPs             = "KUBE-IPVS-IPS"
)

// ipset names of our own, for the rules kube-proxy's IPVS mode lacks.
const (
	// setNoEndpoints holds VIP,proto:port of virtual servers with no usable real server;
	// new connections to them are rejected at once (kubernetes#78994).
	setNoEndpoints = "KUBE-NO-ENDPOINTS"
	// setExternalNoLocal holds external VIP,proto:port of ETP=Local services with no local
	// endpoint; traffic from outside the cluster to them is dropped (kubernetes#93456).
	setExternalNoLocal = "KUBE-EXTERNAL-NO-LOCAL-EP"
	// setServiceIPs holds every Service's ClusterIPs, whichever proxy serves it: traffic
	// to an address of the service CIDRs outside it is rejected (unallocated.go).
	setServiceIPs = "KUBE-SERVICE-IPS"
)

// Set capacity: kube-proxy's maxelem, 65,536 (pkg/proxy/ipvs/ipset/ipset.go,
// setIPSetDefaults), while the members fit. kube-proxy makes its sets with `ipset create
// ... -exist`, which fails on a set of the same name made with another maxelem, and its
// IPVS mode then stops its sync, so with any other value a rollback from us to it
// (docs/migration.md) programs nothing. Past it, SetCapacity grows the set, where
// kube-proxy's adds fail. hashsize is the kernel's starting size (1024): hash sets grow
// on demand up to maxelem, and vishvananda/netlink cannot set it, so the plan prints
// what the kernel will show.
const (
	setMaxElem  = 65536
	setHashSize = 1024
)

// maxSetCapacity bounds SetCapacity (ipset's maxelem is 32 bits).
const maxSetCapacity = 1 << 31

// SetCapacity is the maxelem of a hash set with n desired members: kube-proxy's 65,536
// while they fit, else the smallest power of two of at least 2n, so that a growing
// cluster remakes the set seldom (each remake copies every member).
func SetCapacity(n int) uint32 {
	if n <= setMaxElem {
		return setMaxElem
	}
	c := uint64(setMaxElem)
	for c < 2*uint64(n) && c < maxSetCapacity {
		c *= 2
	}
	return uint32(c)
}

// Sized returns set with the capacity that n desired members need: SetCapacity for a
// hash set; a bitmap:port set (MaxElem 0) keeps its fixed range.
func Sized(set kernel.Set, n int) kernel.Set {
	if set.MaxElem != 0 {
		set.MaxElem = SetCapacity(n)
	}
	return set
}

type setDef struct {
	name    string
	typ     kernel.SetType
	comment string
}

// setDefs lists every set in kube-proxy's order, then ours.
var setDefs = []setDef{
	{setLoopBack, kernel.HashIPPortIP, "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose"},
	{setClusterIP, kernel.HashIPPort, "Kubernetes service cluster ip + port for masquerade purpose"},
	{setExternalIP, kernel.HashIPPort, "Kubernetes service external ip + port for masquerade and filter purpose"},
	{setExternalIPLocal, kernel.HashIPPort, "Kubernetes service external ip + port with externalTrafficPolicy=local"},
	{setLoadBalancer, kernel.HashIPPort, "Kubernetes service lb portal"},
	{setLoadBalancerLocal, kernel.HashIPPort, "Kubernetes service load balancer ip + port with externalTrafficPolicy=local"},
	{setLoadBalancerFW, kernel.HashIPPort, "Kubernetes service load balancer ip + port for load balancer with sourceRange"},
	{setLoadBalancerSrcCIDR, kernel.HashIPPortNet, "Kubernetes service load balancer ip + port + source cidr for packet filter purpose"},
	{setLoadBalancerSrcIP, kernel.HashIPPortIP, "Kubernetes service load balancer ip + port + source IP for packet filter purpose"},
	{setNodePortTCP, kernel.BitmapPort, "Kubernetes nodeport TCP port for masquerade purpose"},
	{setNodePortLocalTCP, kernel.BitmapPort, "Kubernetes nodeport TCP port with externalTrafficPolicy=local"},
	{setNodePortUDP, kernel.BitmapPort, "Kubernetes nodeport UDP port for masquerade purpose"},
	{setNodePortLocalUDP, kernel.BitmapPort, "Kubernetes nodeport UDP port with externalTrafficPolicy=local"},
	{setNodePortSCTP, kernel.HashIPPort, "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'"},
	{setNodePortLocalSCTP, kernel.HashIPPort, "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'"},
	{setHealthCheckNodePort, kernel.BitmapPort, "Kubernetes health check node port"},
	{setIPVSIPs, kernel.HashIP, "Addresses on the ipvs interface"},
	{setNoEndpoints, kernel.HashIPPort, "ipvs-proxier service ip + port with no endpoints, rejected"},
	{setExternalNoLocal, kernel.HashIPPort, "ipvs-proxier external ip + port with externalTrafficPolicy=local and no local endpoint"},
	{setServiceIPs, kernel.HashIP, "ipvs-proxier every Service's cluster ip, whichever proxy serves it"},
}

// SetName returns the family's name for a base (IPv4) set name: IPv6 sets use
// kube-proxy's "KUBE-6-" prefix, cut to ipset's 31-character limit.
func SetName(base string, f kernel.Family) string {
	if f != kernel.IPv6 {
		return base
	}
	n := "KUBE-6-" + strings.TrimPrefix(base, "KUBE-")
	if len(n) > 31 {
		n = n[:31]
	}
	return n
}

// Sets returns every set the node needs for the given families, in a fixed order.
func Sets(families []kernel.Family) []kernel.Set {
	var out []kernel.Set
	for _, f := range families {
		for _, d := range setDefs {
			s := kernel.Set{Name: SetName(d.name, f), Type: d.typ, Family: f, Comment: d.comment}
			if d.typ != kernel.BitmapPort {
				s.MaxElem, s.HashSize = setMaxElem, setHashSize
			}
			out = append(out, s)
		}
	}
	return out
}

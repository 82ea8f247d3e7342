package conformance

import (
	"fmt"
	"strings"
)

// A Shape is a cluster the suite judges the proxies on: its address families (the first
// one primary: the `kubernetes` Service, kube-dns and each Service's default family) and
// its nodes, one zone each.
type Shape struct {
	Name     string
	Families []Family
	Nodes    int
}

// Family is one address family's addressing of the cluster.
type Family struct {
	Name string // IPv4 or IPv6
	// ClusterCIDR is the pod network, NodeMask the size of each node's podCIDR from it.
	ClusterCIDR string
	NodeMask    int
	// ServiceCIDR is the apiserver's Service range; DNSServiceIP its tenth address, which
	// kubeadm gives kube-dns.
	ServiceCIDR, DNSServiceIP string
	// LinkPrefix is the nodes' shared link: node i (from 0) has LinkPrefix + (11+i).
	LinkPrefix string
	LinkBits   int
	// APIServer is where pods reach the apiserver for the `kubernetes` Service's
	// EndpointSlice of this family: the qemu guestfwd for IPv4; for IPv6 an address every
	// node holds on its loopback, where the node's agent relays to the guestfwd (qemu's
	// user network forwards IPv4 only).
	APIServer string
}

// The families' addressing. The IPv6 ranges are ULAs (RFC 4193).
var (
	IPv4 = Family{Name: "IPv4", ClusterCIDR: "10.244.0.0/16", NodeMask: 24, ServiceCIDR: "10.96.0.0/16", DNSServiceIP: "10.96.0.10",
		LinkPrefix: "192.168.100.", LinkBits: 24, APIServer: "10.0.2.100"}
	IPv6 = Family{Name: "IPv6", ClusterCIDR: "fd00:10:244::/56", NodeMask: 64, ServiceCIDR: "fd00:96::/112", DNSServiceIP: "fd00:96::a",
		LinkPrefix: "fd00:100::", LinkBits: 64, APIServer: "fd00:ffff::100"}
)

// Shapes are the clusters `make conformance` can run on (CONFORMANCE_SHAPE).
var Shapes = []Shape{
	{Name: "ipv4", Families: []Family{IPv4}, Nodes: 2},
	{Name: "dual-stack", Families: []Family{IPv4, IPv6}, Nodes: 2},
	{Name: "ipv6-first", Families: []Family{IPv6, IPv4}, Nodes: 2},
	{Name: "three-zones", Families: []Family{IPv4, IPv6}, Nodes: 3},
}

// DefaultShape is the shape `make conformance` runs when CONFORMANCE_SHAPE is unset.
const DefaultShape = "dual-stack"

// LookupShape finds a shape by name.
func LookupShape(name string) (Shape, error) {
	var names []string
	for _, s := range Shapes {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Shape{}, fmt.Errorf("unknown cluster shape %q (%s)", name, strings.Join(names, ", "))
}

// Primary is the shape's first family.
func (s Shape) Primary() Family { return s.Families[0] }

// DualStack reports whether the shape has both families.
func (s Shape) DualStack() bool { return len(s.Families) == 2 }

// join is one field of each family, comma-separated, the primary first.
func (s Shape) join(f func(Family) string) string {
	parts := make([]string, len(s.Families))
	for i, fam := range s.Families {
		parts[i] = f(fam)
	}
	return strings.Join(parts, ",")
}

// ServiceCIDRs is kube-apiserver's and kube-controller-manager's --service-cluster-ip-range.
func (s Shape) ServiceCIDRs() string { return s.join(func(f Family) string { return f.ServiceCIDR }) }

// ClusterCIDRs is kube-controller-manager's --cluster-cidr.
func (s Shape) ClusterCIDRs() string { return s.join(func(f Family) string { return f.ClusterCIDR }) }

// NodeIPs is node i's kubelet --node-ip (its link addresses), the primary first.
func (s Shape) NodeIPs(i int) string { return s.join(func(f Family) string { return f.NodeIP(i) }) }

// NodeIP is node i's address on the link.
func (f Family) NodeIP(i int) string { return fmt.Sprintf("%s%d", f.LinkPrefix, 11+i) }

// ControllerArgs are kube-controller-manager's node IPAM flags: a podCIDR per family for
// each node (per-family mask sizes when dual-stack, as the flag's help says).
func (s Shape) ControllerArgs() []string {
	args := []string{"--allocate-node-cidrs", "--cluster-cidr", s.ClusterCIDRs(), "--service-cluster-ip-range", s.ServiceCIDRs()}
	if !s.DualStack() {
		return append(args, "--node-cidr-mask-size", fmt.Sprint(s.Primary().NodeMask))
	}
	for _, f := range s.Families {
		args = append(args, fmt.Sprintf("--node-cidr-mask-size-%s", strings.ToLower(f.Name)), fmt.Sprint(f.NodeMask))
	}
	return args
}

// Zone is node i's topology.kubernetes.io/zone.
func Zone(i int) string { return fmt.Sprintf("zone-%c", 'a'+i) }

// DocsName is the base name of a shape's report in docs/: conformance for ipv4, the
// two-node IPv4 cluster every earlier run used, conformance-SHAPE for the others.
func DocsName(shape string) string {
	if shape == "" || shape == "ipv4" {
		return "conformance"
	}
	return "conformance-" + shape
}

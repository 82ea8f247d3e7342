package source

import (
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// NodeOptions say how the node's own part of the translation config is found.
type NodeOptions struct {
	// NodePortPrimary is nodePortAddresses' "primary" keyword: NodePorts also listen on
	// the Node's primary IP of each family (PrimaryNodeIPs), re-read when the Node
	// changes. With no primary IP known, "primary" opens no NodePort (never all); with
	// one family's only, the other family the list does not name listens on all its
	// addresses, as kube-proxy's expandNodePortAddressKeywords and NewNodePortAddresses
	// make it.
	NodePortPrimary bool
	// BindAddress is kube-proxy's bindAddress when it names one IP: it overrides the
	// Node's primary IP of its family, as kube-proxy's detectNodeIPs does
	// (cmd/kube-proxy/app/server.go). The zero value overrides nothing.
	BindAddress netip.Addr
	// LocalAddresses lists the node's own addresses (all interfaces but the dummy); nil
	// uses the Node object's.
	LocalAddresses func() ([]netip.Addr, error)
}

// NodeConfig fills the node-derived fields of base that base leaves empty: the primary
// IPs, the zone, the pod CIDRs (detectLocalMode NodeCIDR), the ServiceCIDRs (the
// cluster's objects, when known, win over --service-cluster-ip-range), the "primary"
// NodePort addresses and the node IPs (the local addresses, else the Node's). The daemon
// and `plan` both get their config from here, through the syncer. A LocalAddresses
// error is returned with the config built from the Node's addresses instead.
func NodeConfig(base proxier.Config, node *v1.Node, serviceCIDRs []netip.Prefix, o NodeOptions) (proxier.Config, error) {
	cfg := base
	cfg.NodeIPs = slices.Clone(cfg.NodeIPs)
	if len(cfg.PrimaryIPs) == 0 {
		cfg.PrimaryIPs = withBindAddress(PrimaryNodeIPs(node), o.BindAddress)
	}
	if cfg.Zone == "" && node != nil {
		cfg.Zone = node.Labels[v1.LabelTopologyZone]
	}
	if cfg.LocalMode == proxier.LocalModeNodeCIDR {
		cfg.NodePodCIDRs = NodePodCIDRs(node)
	}
	if len(serviceCIDRs) > 0 {
		cfg.ServiceCIDRs = serviceCIDRs
	}
	if o.NodePortPrimary {
		cfg.NodePortAddresses = slices.Clone(cfg.NodePortAddresses)
		for _, ip := range cfg.PrimaryIPs {
			cfg.NodePortAddresses = append(cfg.NodePortAddresses, netip.PrefixFrom(ip, ip.BitLen()))
		}
		if len(cfg.PrimaryIPs) == 0 {
			// A family the list does not name is every address of it: "primary" with
			// no primary IP yet must match nothing, in both families. The unspecified
			// address is never a node IP.
			cfg.NodePortAddresses = append(cfg.NodePortAddresses,
				netip.PrefixFrom(netip.IPv4Unspecified(), 32), netip.PrefixFrom(netip.IPv6Unspecified(), 128))
		}
	}
	if len(cfg.NodeIPs) > 0 {
		return cfg, nil
	}
	var err error
	if o.LocalAddresses != nil {
		var addrs []netip.Addr
		if addrs, err = o.LocalAddresses(); err == nil {
			cfg.NodeIPs = addrs
			return cfg, nil
		}
	}
	cfg.NodeIPs = NodeAddresses(node)
	return cfg, err
}

// PrimaryNodeIPs returns a Node's first InternalIP of each family, or its first
// ExternalIP where it has no InternalIP of that family: what kube-proxy detects as the
// node IP (cmd/kube-proxy/app/server.go, detectNodeIPs).
func PrimaryNodeIPs(node *v1.Node) []netip.Addr {
	if node == nil {
		return nil
	}
	var out []netip.Addr
	for _, typ := range []v1.NodeAddressType{v1.NodeInternalIP, v1.NodeExternalIP} {
		for _, a := range node.Status.Addresses {
			ip, err := netip.ParseAddr(a.Address)
			if a.Type != typ || err != nil || slices.ContainsFunc(out, func(o netip.Addr) bool { return o.Is4() == ip.Unmap().Is4() }) {
				continue
			}
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// NodePodCIDRs returns a Node's spec.podCIDRs (spec.podCIDR when only that is set), the
// ranges detectLocalMode NodeCIDR counts as this node's pods. kube-proxy waits up to 5 min
// for them at start and exits when they change (pkg/proxy/node.go, NodeManager); the
// syncer re-reads them on every Node change instead.
func NodePodCIDRs(node *v1.Node) []netip.Prefix {
	if node == nil {
		return nil
	}
	cidrs := node.Spec.PodCIDRs
	if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
		cidrs = []string{node.Spec.PodCIDR}
	}
	var out []netip.Prefix
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

// withBindAddress puts bind in place of the primary IP of its family.
func withBindAddress(primary []netip.Addr, bind netip.Addr) []netip.Addr {
	if !bind.IsValid() {
		return primary
	}
	out := []netip.Addr{bind}
	for _, ip := range primary {
		if ip.Is4() != bind.Is4() {
			out = append(out, ip)
		}
	}
	return out
}

// NodeAddresses returns the InternalIP and ExternalIP addresses of a Node.
func NodeAddresses(node *v1.Node) []netip.Addr {
	if node == nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range node.Status.Addresses {
		if a.Type != v1.NodeInternalIP && a.Type != v1.NodeExternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && !slices.Contains(out, ip.Unmap()) {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

package conformance

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// The pod network: Debian's CNI plugins (bridge with host-local IPAM, loopback, portmap)
// give each node's pods addresses from its Node.spec.podCIDR, which
// kube-controller-manager's node IPAM allocates from the cluster CIDR; each node routes
// the other nodes' pod CIDRs through their link addresses, as a flat pod network without
// encapsulation does (Calico's BGP mode, or flannel's host-gw).

// PodNetwork is one node's share of the pod network.
type PodNetwork struct {
	PodCIDR string            // this node's Node.spec.podCIDR
	Peers   map[string]string // another node's podCIDR -> its link address
	// ClusterCIDR is the whole pod network: traffic from it to anything outside it
	// that leaves through the node's uplink (eth0) is masqueraded, as a CNI's
	// outgoing NAT does, so pods reach the apiserver's address.
	ClusterCIDR string
}

// Conflist is the CNI configuration for the node: a bridge (cni0) whose gateway is the
// first address of the pod CIDR, hairpin mode on (a pod reaching itself through a
// Service comes back through its own bridge port), no masquerade of its own (the node
// masquerades only traffic that leaves the pod network), and portmap for hostPort.
func (pn PodNetwork) Conflist() (string, error) {
	prefix, err := netip.ParsePrefix(pn.PodCIDR)
	if err != nil {
		return "", fmt.Errorf("podCIDR %q: %w", pn.PodCIDR, err)
	}
	if prefix != prefix.Masked() || prefix.Bits() > 30 {
		return "", fmt.Errorf("podCIDR %q is not a network of at least 4 addresses", pn.PodCIDR)
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "conformance",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":   "host-local",
					"ranges": [][]map[string]string{{{"subnet": prefix.String(), "gateway": prefix.Addr().Next().String()}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	return string(b), err
}

// Script is the shell that sets the node's share up: the conflist where containerd
// reads it, the routes to the peers' pod CIDRs, bridged traffic through iptables and
// IPVS (br_netfilter: a Service's traffic between two pods of one bridge), and the
// outgoing masquerade.
func (pn PodNetwork) Script() (string, error) {
	conf, err := pn.Conflist()
	if err != nil {
		return "", err
	}
	cluster, err := netip.ParsePrefix(pn.ClusterCIDR)
	if err != nil {
		return "", fmt.Errorf("cluster CIDR %q: %w", pn.ClusterCIDR, err)
	}
	var b strings.Builder
	b.WriteString("set -e\nmkdir -p /etc/cni/net.d\ncat > /etc/cni/net.d/10-conformance.conflist <<'EOF'\n" + conf + "\nEOF\n")
	cidrs := make([]string, 0, len(pn.Peers))
	for c := range pn.Peers {
		cidrs = append(cidrs, c)
	}
	sort.Strings(cidrs)
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return "", fmt.Errorf("peer podCIDR %q: %w", c, err)
		}
		gw, err := netip.ParseAddr(pn.Peers[c])
		if err != nil {
			return "", fmt.Errorf("peer address %q: %w", pn.Peers[c], err)
		}
		fmt.Fprintf(&b, "ip route replace %s via %s\n", p, gw)
	}
	b.WriteString("modprobe br_netfilter\necho 1 > /proc/sys/net/bridge/bridge-nf-call-iptables\necho 1 > /proc/sys/net/bridge/bridge-nf-call-ip6tables\n")
	rule := fmt.Sprintf("POSTROUTING -s %s ! -d %s -o eth0 -j MASQUERADE", cluster, cluster)
	fmt.Fprintf(&b, "iptables -t nat -C %s 2>/dev/null || iptables -t nat -A %s\n", rule, rule)
	return b.String(), nil
}

package conformance

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// The pod network: Debian's CNI plugins (bridge with host-local IPAM, loopback, portmap)
// give each node's pods addresses from its Node.spec.podCIDRs (one per family), which
// kube-controller-manager's node IPAM allocates from the cluster CIDRs; each node routes
// the other nodes' pod CIDRs through their link addresses, as a flat pod network without
// encapsulation does (Calico's BGP mode, or flannel's host-gw).

// PodNetwork is one node's share of the pod network.
type PodNetwork struct {
	PodCIDRs []string          // this node's Node.spec.podCIDRs, one per family
	Peers    map[string]string // another node's podCIDR -> its link address of that family
	// ClusterCIDRs are the whole pod network: IPv4 traffic from it to anything outside
	// it that leaves through the node's uplink (eth0) is masqueraded, as a CNI's outgoing
	// NAT does, so pods reach the apiserver's address. The uplink carries no IPv6: IPv6
	// pods reach the apiserver through the node's relay (Family.APIServer).
	ClusterCIDRs []string
}

// Conflist is the CNI configuration for the node: a bridge (cni0) whose gateway is the
// first address of each pod CIDR, hairpin mode on (a pod reaching itself through a
// Service comes back through its own bridge port), no masquerade of its own (the node
// masquerades only traffic that leaves the pod network), host-local with a range per
// family (a pod gets an address of each), and portmap for hostPort.
func (pn PodNetwork) Conflist() (string, error) {
	if len(pn.PodCIDRs) == 0 || len(pn.PodCIDRs) > 2 {
		return "", fmt.Errorf("podCIDRs %v: want one or one per family", pn.PodCIDRs)
	}
	var ranges [][]map[string]string
	var routes []map[string]string
	families := map[bool]bool{}
	for _, c := range pn.PodCIDRs {
		prefix, err := netip.ParsePrefix(c)
		if err != nil {
			return "", fmt.Errorf("podCIDR %q: %w", c, err)
		}
		if prefix != prefix.Masked() || prefix.Bits() > prefix.Addr().BitLen()-2 {
			return "", fmt.Errorf("podCIDR %q is not a network of at least 4 addresses", c)
		}
		if families[prefix.Addr().Is4()] {
			return "", fmt.Errorf("podCIDRs %v: two of one family", pn.PodCIDRs)
		}
		families[prefix.Addr().Is4()] = true
		ranges = append(ranges, []map[string]string{{"subnet": prefix.String(), "gateway": prefix.Addr().Next().String()}})
		dst := "0.0.0.0/0"
		if prefix.Addr().Is6() {
			dst = "::/0"
		}
		routes = append(routes, map[string]string{"dst": dst})
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "conformance",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{"type": "host-local", "ranges": ranges, "routes": routes},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	return string(b), err
}

// Script is the shell that sets the node's share up: the conflist where containerd
// reads it, forwarding on, the routes to the peers' pod CIDRs, bridged traffic through
// iptables and IPVS (br_netfilter: a Service's traffic between two pods of one bridge),
// and the outgoing IPv4 masquerade.
func (pn PodNetwork) Script() (string, error) {
	conf, err := pn.Conflist()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("set -e\nmkdir -p /etc/cni/net.d\ncat > /etc/cni/net.d/10-conformance.conflist <<'EOF'\n" + conf + "\nEOF\n")
	b.WriteString("echo 1 > /proc/sys/net/ipv4/ip_forward\necho 1 > /proc/sys/net/ipv6/conf/all/forwarding\n")
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
		if gw.Is4() != p.Addr().Is4() {
			return "", fmt.Errorf("peer podCIDR %s through %s: not one family", p, gw)
		}
		fmt.Fprintf(&b, "ip route replace %s via %s\n", p, gw)
	}
	b.WriteString("modprobe br_netfilter\necho 1 > /proc/sys/net/bridge/bridge-nf-call-iptables\necho 1 > /proc/sys/net/bridge/bridge-nf-call-ip6tables\n")
	for _, c := range pn.ClusterCIDRs {
		cluster, err := netip.ParsePrefix(c)
		if err != nil {
			return "", fmt.Errorf("cluster CIDR %q: %w", c, err)
		}
		if !cluster.Addr().Is4() {
			continue
		}
		rule := fmt.Sprintf("POSTROUTING -s %s ! -d %s -o eth0 -j MASQUERADE", cluster, cluster)
		fmt.Fprintf(&b, "iptables -t nat -C %s 2>/dev/null || iptables -t nat -A %s\n", rule, rule)
	}
	return b.String(), nil
}

// APIServerRelay is the shell that makes the IPv6 Family.APIServer address answer on a
// node: the address on its loopback, and its agent relaying each connection to the
// apiserver's IPv4 guestfwd (qemu's user network forwards IPv4 only).
func APIServerRelay(port int) string {
	return fmt.Sprintf("ip -6 addr replace %s/128 dev lo\n(/agent forward '[%s]:%d' '%s:%d' >/tmp/apiserver-relay.log 2>&1 &)\n",
		IPv6.APIServer, IPv6.APIServer, port, IPv4.APIServer, port)
}

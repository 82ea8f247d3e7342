package source

import (
	"net/netip"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// testNode names the node the source tests run on.
const testNode = "test-node"

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

// TestBindAddressReplacesItsFamily: bindAddress takes the place of the primary IP of its
// family only; the other family's primary comes from the Node.
func TestBindAddressReplacesItsFamily(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}, Status: v1.NodeStatus{Addresses: []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "192.168.0.10"}, {Type: v1.NodeInternalIP, Address: "fd00::5"}}}}
	cfg, err := NodeConfig(proxier.Config{}, node, nil, NodeOptions{BindAddress: netip.MustParseAddr("10.0.0.5"), NodePortPrimary: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := addrs("10.0.0.5", "fd00::5"); !slices.Equal(cfg.PrimaryIPs, want) {
		t.Errorf("primaries %v, want %v", cfg.PrimaryIPs, want)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32"), netip.MustParsePrefix("fd00::5/128")}
	if !slices.Equal(cfg.NodePortAddresses, want) {
		t.Errorf("NodePort addresses %v, want %v", cfg.NodePortAddresses, want)
	}
	if want := addrs("192.168.0.10", "fd00::5"); !slices.Equal(cfg.NodeIPs, want) {
		t.Errorf("node IPs %v, want the Node's %v", cfg.NodeIPs, want)
	}
}

// TestPrimaryWithoutANodeOpensNothing: "primary" with no primary IP known allows no
// address of either family (a family the list does not name would mean all of it).
// With a primary IP of one family only, the other family is not named, so all its
// addresses serve NodePorts, as kube-proxy's expandNodePortAddressKeywords
// (cmd/kube-proxy/app/server.go) and NewNodePortAddresses make it.
func TestPrimaryWithoutANodeOpensNothing(t *testing.T) {
	local := addrs("10.0.0.1", "fd00::1")
	cfg, err := NodeConfig(proxier.Config{NodeIPs: local}, nil, nil, NodeOptions{NodePortPrimary: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range local {
		if cfg.NodePortAllowed(ip) {
			t.Errorf("no Node: NodePorts on %s (NodePort addresses %v)", ip, cfg.NodePortAddresses)
		}
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}
	node.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}}
	cfg, err = NodeConfig(proxier.Config{NodeIPs: append(local, addrs("10.0.0.2")...)}, node, nil, NodeOptions{NodePortPrimary: true})
	if err != nil {
		t.Fatal(err)
	}
	for ip, want := range map[string]bool{"10.0.0.1": true, "10.0.0.2": false, "fd00::1": true} {
		if got := cfg.NodePortAllowed(netip.MustParseAddr(ip)); got != want {
			t.Errorf("IPv4 primary only: NodePorts on %s %v, want %v (NodePort addresses %v)", ip, got, want, cfg.NodePortAddresses)
		}
	}
}

// TestPodCIDRsAreANodeChange: a change of spec.podCIDRs (detectLocalMode NodeCIDR reads
// them) is a Node change; a status heartbeat is not.
func TestPodCIDRsAreANodeChange(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}
	for _, cidr := range []string{"10.244.3.0/24", "10.244.7.0/24"} {
		old := node.DeepCopy()
		node.Spec.PodCIDRs = []string{cidr, "fd00:10:0:3::/64"}
		if !nodeChanged(old, node) {
			t.Fatalf("pod CIDR %s: not a Node change", cidr)
		}
		cfg, _ := NodeConfig(proxier.Config{LocalMode: proxier.LocalModeNodeCIDR}, node, nil, NodeOptions{})
		if want := []netip.Prefix{netip.MustParsePrefix(cidr), netip.MustParsePrefix("fd00:10:0:3::/64")}; !slices.Equal(cfg.NodePodCIDRs, want) {
			t.Errorf("pod CIDRs %v, want %v", cfg.NodePodCIDRs, want)
		}
	}
	hb := node.DeepCopy()
	hb.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	if nodeChanged(node, hb) {
		t.Error("a status heartbeat counts as a Node change")
	}
}

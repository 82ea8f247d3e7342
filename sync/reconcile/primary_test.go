package reconcile

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestNodePortAddressesPrimary: "primary" opens NodePorts on the Node's primary IP only
// (not on the node's other addresses), follows a change of the Node, and with no Node
// yet opens none; the daemon once dropped the keyword and opened every address.
func TestNodePortAddressesPrimary(t *testing.T) {
	node := func(ip string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode},
			Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}}}
	}
	hc := &recordingHC{want: map[proxier.ServiceKey]proxier.HealthCheck{}}
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) {
		o.Config.NodeIPs = []netip.Addr{netip.MustParseAddr("192.168.0.10"), netip.MustParseAddr("10.0.0.5")}
		o.NodePortPrimary = true
		o.HealthChecks = hc
	})
	addNodePort30080(t, h)
	if d := h.fake.Dump(); strings.Contains(d, ":30080") {
		t.Errorf("no Node yet, yet NodePorts:\n%s", d)
	}
	// healthCheckNodePorts follow the same addresses: none yet (empty, not nil: nil is all).
	if hc.addrs == nil || len(hc.addrs) != 0 {
		t.Errorf("no Node yet: health checks on %v, want none", hc.addrs)
	}
	for _, tc := range []struct{ primary, want, not string }{
		{"192.168.0.10", "TCP  192.168.0.10:30080", "TCP  10.0.0.5:30080"},
		{"10.0.0.5", "TCP  10.0.0.5:30080", "TCP  192.168.0.10:30080"},
	} {
		h.src.SetNode(node(tc.primary))
		h.tracker.AllChanged()
		h.mustSync(t)
		if d := h.fake.Dump(); !strings.Contains(d, tc.want) || strings.Contains(d, tc.not) {
			t.Errorf("primary %s:\n%s", tc.primary, d)
		}
		if want := []netip.Addr{netip.MustParseAddr(tc.primary)}; !slices.Equal(hc.addrs, want) {
			t.Errorf("primary %s: health checks on %v, want %v", tc.primary, hc.addrs, want)
		}
	}
}

// TestBindAddressIsThePrimary: kube-proxy's bindAddress, when it names one IP, is the
// primary IP of its family whatever the Node says (before the Node is known too); the
// other family's primary still comes from the Node.
func TestBindAddressIsThePrimary(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) {
		o.Config.NodeIPs = []netip.Addr{netip.MustParseAddr("192.168.0.10"), netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fd00::5")}
		o.NodePortPrimary = true
		o.BindAddress = netip.MustParseAddr("10.0.0.5")
	})
	addNodePort30080(t, h)
	if d := h.fake.Dump(); !strings.Contains(d, "TCP  10.0.0.5:30080") || strings.Contains(d, "TCP  192.168.0.10:30080") {
		t.Errorf("no Node yet: want the NodePort on the bind address only:\n%s", d)
	}
	h.src.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}, Status: v1.NodeStatus{Addresses: []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "192.168.0.10"}, {Type: v1.NodeInternalIP, Address: "fd00::5"}}}})
	h.tracker.AllChanged()
	h.mustSync(t)
	if d := h.fake.Dump(); !strings.Contains(d, "TCP  10.0.0.5:30080") || strings.Contains(d, "TCP  192.168.0.10:30080") {
		t.Errorf("the Node's IPv4 primary replaced the bind address:\n%s", d)
	}
}

// addNodePort30080 makes ns/np, a NodePort Service on 30080 with one endpoint, and syncs.
func addNodePort30080(t *testing.T, h *harness) {
	t.Helper()
	np := svc("ns", "np", "10.96.0.20", 80, v1.ProtocolTCP)
	np.Spec.Type = v1.ServiceTypeNodePort
	np.Spec.Ports[0].NodePort = 30080
	h.src.SetService(np)
	h.src.SetSlice(slice("ns", "np", "np-1", 8080, v1.ProtocolTCP, "10.244.0.1"))
	h.tracker.AllChanged()
	h.mustSync(t)
}

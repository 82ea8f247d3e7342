package reconcile

import (
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestExternalIPsGateOnTheKernel: with the AllowServiceExternalIPs gate off
// (Config.IgnoreExternalIPs) a sync leaves a Service's externalIPs off the kernel: no
// virtual server, no address on the dummy device, no set member.
func TestExternalIPsGateOnTheKernel(t *testing.T) {
	for _, off := range []bool{false, true} {
		h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.Config.IgnoreExternalIPs = off })
		s := svc("ns", "ext", "10.96.0.30", 80, v1.ProtocolTCP)
		s.Spec.ExternalIPs = []string{"203.0.113.9"}
		h.src.SetService(s)
		h.src.SetSlice(slice("ns", "ext", "ext-1", 8080, v1.ProtocolTCP, "10.244.0.1"))
		h.tracker.AllChanged()
		h.mustSync(t)
		d := h.fake.Dump()
		if got := strings.Contains(d, "203.0.113.9"); got == off {
			t.Errorf("gate off %v: external IP in the kernel %v:\n%s", off, got, d)
		}
		if !strings.Contains(d, "TCP  10.96.0.30:80") {
			t.Errorf("gate off %v: no ClusterIP virtual server:\n%s", off, d)
		}
	}
}

// TestNodePortAddressesPerFamilyOnTheKernel: nodePortAddresses naming IPv4 ranges only
// narrows IPv4 NodePorts and leaves every IPv6 node address serving them, as kube-proxy's
// NewNodePortAddresses reads the list per family.
func TestNodePortAddressesPerFamilyOnTheKernel(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) {
		o.Config.NodeIPs = []netip.Addr{netip.MustParseAddr("192.168.0.10"), netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fd00::5")}
		o.Config.NodePortAddresses = []netip.Prefix{netip.MustParsePrefix("192.168.0.0/24")}
	})
	np := svc("ns", "np", "fd00:96::20", 80, v1.ProtocolTCP)
	np.Spec.Type = v1.ServiceTypeNodePort
	np.Spec.Ports[0].NodePort = 30080
	np.Spec.ClusterIPs = []string{"10.96.0.20", "fd00:96::20"}
	np.Spec.ClusterIP = "10.96.0.20"
	h.src.SetService(np)
	h.tracker.AllChanged()
	h.mustSync(t)
	d := h.fake.Dump()
	for _, want := range []string{"TCP  192.168.0.10:30080", "TCP  [fd00::5]:30080"} {
		if !strings.Contains(d, want) {
			t.Errorf("no %s:\n%s", want, d)
		}
	}
	if strings.Contains(d, "10.0.0.5:30080") {
		t.Errorf("NodePort outside nodePortAddresses:\n%s", d)
	}
}

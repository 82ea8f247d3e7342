package reconcile

import (
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestRestartPrunesStaleNodeIPVirtualServers: Services deleted while the daemon was
// down leave virtual servers on a node IP that the NodePort range does not cover (a
// NodePort from a custom --service-node-port-range, an external IP equal to a node IP).
// Our sets name them, so the restarted daemon prunes them; a foreign virtual server on
// the node IP stays.
func TestRestartPrunesStaleNodeIPVirtualServers(t *testing.T) {
	nodeIP := netip.MustParseAddr("192.168.0.10")
	withNodeIP := func(o *Options) { o.Config.NodeIPs = []netip.Addr{nodeIP} }
	h := newHarness(t, kernel.Kernel{}, nil, withNodeIP)
	np := svc("ns", "np", "10.96.0.20", 80, v1.ProtocolTCP)
	np.Spec.Type = v1.ServiceTypeNodePort
	np.Spec.Ports[0].NodePort = 40080 // a custom NodePort range
	ext := svc("ns", "ext", "10.96.0.21", 80, v1.ProtocolTCP)
	ext.Spec.ExternalIPs = []string{nodeIP.String()}
	for _, s := range []*v1.Service{np, ext} {
		h.src.SetService(s)
		h.src.SetSlice(slice("ns", s.Name, s.Name+"-1", 8080, v1.ProtocolTCP, "10.244.0.1"))
	}
	h.tracker.AllChanged()
	h.mustSync(t)
	foreign := kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: nodeIP, Port: 8443}, VSSettings: kernel.VSSettings{Scheduler: "rr"}}
	must(t, h.fake.AddVirtualServer(foreign))
	for _, want := range []string{"TCP  192.168.0.10:40080", "TCP  192.168.0.10:80"} {
		if !strings.Contains(h.fake.Dump(), want) {
			t.Fatalf("%s not programmed:\n%s", want, h.fake.Dump())
		}
	}

	// Restart with both Services gone.
	h2 := newHarness(t, kernel.Kernel{}, h.fake, withNodeIP)
	h2.mustSync(t)
	dump := h.fake.Dump()
	for _, stale := range []string{"TCP  192.168.0.10:40080", "TCP  192.168.0.10:80 "} {
		if strings.Contains(dump, stale) {
			t.Errorf("stale %s kept after the restart:\n%s", stale, dump)
		}
	}
	if !strings.Contains(dump, "TCP  192.168.0.10:8443") {
		t.Errorf("foreign virtual server pruned:\n%s", dump)
	}
}

// TestTakeoverPrunesLinkLocalNodePorts: kube-proxy's IPVS mode programs NodePorts on
// link-local addresses too; we do not, so after a takeover those virtual servers, which
// our (shared) NodePort sets name, are removed. A link-local one they do not name stays.
func TestTakeoverPrunesLinkLocalNodePorts(t *testing.T) {
	fake := kernel.NewFake()
	ll := netip.MustParseAddr("169.254.1.1")
	must(t, fake.AddVirtualServer(kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: ll, Port: 30080}, VSSettings: kernel.VSSettings{Scheduler: "rr"}}))
	must(t, fake.AddVirtualServer(kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: ll, Port: 9000}, VSSettings: kernel.VSSettings{Scheduler: "rr"}}))
	h := newHarness(t, kernel.Kernel{}, fake, func(o *Options) { o.Config.NodeIPs = []netip.Addr{netip.MustParseAddr("192.168.0.10")} })
	addNodePort30080(t, h) // the set entry is written now; kube-proxy's would have been there already
	h.tracker.AllChanged()
	h.mustSync(t)
	dump := fake.Dump()
	if strings.Contains(dump, "TCP  169.254.1.1:30080") || !strings.Contains(dump, "TCP  169.254.1.1:9000") || !strings.Contains(dump, "TCP  192.168.0.10:30080") {
		t.Errorf("after the takeover:\n%s", dump)
	}
}

package main

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/sets"
)

// TestKubeRouterVirtualServers: only virtual servers on kube-dummy-if's addresses that
// are not ours go; one on an address both dummies hold (ours took the Service over)
// stays, as do excluded ones, NodePorts on node IPs and anything on other addresses.
func TestKubeRouterVirtualServers(t *testing.T) {
	a := netip.MustParseAddr
	vs := func(addr string, port uint16) kernel.DumpedVS {
		return kernel.DumpedVS{VirtualServer: kernel.VirtualServer{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: a(addr), Port: port}}}
	}
	krAddrs := []netip.Addr{a("10.96.0.10"), a("10.96.0.11"), a("10.96.5.5"), a("10.96.0.12")}
	ourDummy := map[netip.Addr]bool{a("10.96.0.11"): true, a("10.96.9.9"): true}
	// linux.LocalAddresses lists every interface but ours: kube-dummy-if's too.
	nodeIPs := append([]netip.Addr{a("192.168.1.10")}, krAddrs...)
	exclude := []netip.Prefix{netip.MustParsePrefix("10.96.5.0/24")}
	owned := func(k kernel.VSKey, nodeIPs []netip.Addr) bool {
		return sets.Owns(k, ourDummy[k.Address], nodeIPs, exclude, 30000, 32767, nil)
	}
	vss := []kernel.DumpedVS{
		vs("10.96.0.10", 80),      // kube-router's only: goes
		vs("10.96.0.12", 30080),   // kube-router's, a port in the NodePort range: goes
		vs("10.96.0.11", 443),     // on both dummies, ours: stays
		vs("10.96.5.5", 80),       // excluded: stays
		vs("192.168.1.10", 30080), // a NodePort on a node IP (ours by the prune rule): stays
		vs("10.96.9.9", 80),       // ours only: stays
		vs("10.0.0.1", 80),        // another program's: stays
	}
	var got []string
	for _, v := range kubeRouterVirtualServers(vss, krAddrs, nodeIPs, exclude, owned) {
		got = append(got, v.VSKey.String())
	}
	if want := []string{"TCP 10.96.0.10:80", "TCP 10.96.0.12:30080"}; !slices.Equal(got, want) {
		t.Errorf("kube-router's virtual servers: %v, want %v", got, want)
	}
	if got := kubeRouterVirtualServers(vss, nil, nodeIPs, exclude, owned); len(got) != 0 {
		t.Errorf("without kube-dummy-if: %v", got)
	}
}

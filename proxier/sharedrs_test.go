package proxier

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestPortSharesRealServers pins that the virtual servers of one port (here the ClusterIP
// and two NodePorts) share one sorted list of real servers rather than a copy each: at
// 30,000 NodePort Services the copies were a third of the desired state's real servers.
func TestPortSharesRealServers(t *testing.T) {
	cfg := testConfig(nodeIPs("100.101.102.103", "100.101.102.104"))
	svc := makeService("ns", "np", withType(v1.ServiceTypeNodePort, 3001))
	st := translate(cfg, svc, makeSlice("ns", "np", "s1", v1.ProtocolTCP, ep{ip: "10.180.0.3"}, ep{ip: "10.180.0.1"}, ep{ip: "10.180.0.2"}))
	if len(st.VirtualServers) != 3 {
		t.Fatalf("virtual servers: %d, want 3", len(st.VirtualServers))
	}
	first := st.VirtualServers[0].RealServers
	if rss := first.Slice(); len(rss) != 3 || !slices.IsSortedFunc(rss, kernel.CompareRealServers) {
		t.Fatalf("real servers %v: want the 3 endpoints, sorted", first)
	}
	for _, vs := range st.VirtualServers[1:] {
		if !vs.RealServers.Equal(first) || &vs.RealServers.b[0] != &first.b[0] {
			t.Errorf("%v: real servers are a copy, want the port's shared list", vs.VSKey)
		}
	}
}

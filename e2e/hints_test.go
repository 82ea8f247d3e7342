package e2e

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// hinted is an endpoint with the hints the EndpointSlice controller would give it for a
// trafficDistribution Service: its own node (PreferSameNode) and its zone.
type hinted struct {
	ip, node, hintNode, hintZone string
	ready                        bool
}

// setHintedEndpoints writes the Service's one EndpointSlice with the endpoints' hints
// and readiness, as the controller would (no controller-manager runs here).
func setHintedEndpoints(t *testing.T, svcName string, port int32, eps ...hinted) {
	t.Helper()
	var hs []harness.Endpoint
	for _, e := range eps {
		hs = append(hs, harness.Endpoint{IP: e.ip, Node: e.node})
	}
	sl := harness.ReadySlice(svcName, svcName+"-1", port, v1.ProtocolTCP, hs...)
	for i, e := range eps {
		sl.Endpoints[i].Conditions.Ready = ptr.To(e.ready)
		sl.Endpoints[i].Hints = &discovery.EndpointHints{ForZones: []discovery.ForZone{{Name: e.hintZone}}}
		if e.hintNode != "" {
			sl.Endpoints[i].Hints.ForNodes = []discovery.ForNode{{Name: e.hintNode}}
		}
	}
	writeSlice(t, sl)
}

// TestTrafficDistributionHints: node-1 is in zone-a. For a PreferSameNode Service its
// own endpoint alone serves it; when that endpoint stops being ready the zone's hinted
// endpoint does (the fallback to PreferSameZone); when that one goes too, every ready
// endpoint, here node-2's in zone-b (kube-proxy's topologyModeFromHints). Each step is
// read from the kernel and from the answers of node-1's client. A PreferSameZone
// Service (zone hints only) keeps the zone's endpoints.
func TestTrafficDistributionHints(t *testing.T) {
	requireEnv(t)
	pod1 := hinted{ip: "10.244.0.11", node: "node-1", hintNode: "node-1", hintZone: "zone-a", ready: true}
	// pod2 runs on node-1 too, but the hints are what the daemon reads: it stands for an
	// endpoint of another node in zone-a (no third node runs here).
	pod2 := hinted{ip: "10.244.0.12", node: "node-1", hintNode: "node-3", hintZone: "zone-a", ready: true}
	pod4 := hinted{ip: "10.244.1.11", node: "node-2", hintNode: "node-2", hintZone: "zone-b", ready: true}
	// servedBy waits until the real servers of weight above 0 (one that left drains at
	// weight 0) are want, then asks from node-1's client.
	servedBy := func(t *testing.T, vip string, want []string, pods ...string) {
		t.Helper()
		waitIPVS(t, vip+" real servers "+strings.Join(want, ","), func(s string) bool { return slices.Equal(activeRS(s, vip), want) })
		if got := answers(t, "client", "tcp", vip, 8); !slices.Equal(got, pods) {
			t.Errorf("answers from %v, want %v", got, pods)
		}
	}

	t.Run("PreferSameNode", func(t *testing.T) {
		svc := createService(t, service("hints-node", v1.ServiceSpec{TrafficDistribution: ptr.To(v1.ServiceTrafficDistributionPreferSameNode)}), 80, v1.ProtocolTCP)
		vip := svc.Spec.ClusterIP + ":80"
		setHintedEndpoints(t, svc.Name, 80, pod1, pod2, pod4)
		servedBy(t, vip, []string{pod1.ip}, "pod1")

		unready1 := pod1
		unready1.ready = false
		setHintedEndpoints(t, svc.Name, 80, unready1, pod2, pod4)
		servedBy(t, vip, []string{pod2.ip}, "pod2")

		unready2 := pod2
		unready2.ready = false
		setHintedEndpoints(t, svc.Name, 80, unready1, unready2, pod4)
		servedBy(t, vip, []string{pod4.ip}, "pod4")

		setHintedEndpoints(t, svc.Name, 80, pod1, pod2, pod4)
		servedBy(t, vip, []string{pod1.ip}, "pod1")
	})

	t.Run("PreferSameZone", func(t *testing.T) {
		svc := createService(t, service("hints-zone", v1.ServiceSpec{TrafficDistribution: ptr.To(v1.ServiceTrafficDistributionPreferSameZone)}), 80, v1.ProtocolTCP)
		vip := svc.Spec.ClusterIP + ":80"
		zoneOnly := func(h hinted) hinted { h.hintNode = ""; return h }
		setHintedEndpoints(t, svc.Name, 80, zoneOnly(pod1), zoneOnly(pod2), zoneOnly(pod4))
		servedBy(t, vip, []string{pod1.ip, pod2.ip}, "pod1", "pod2")

		gone := zoneOnly(pod1)
		gone.ready = false
		setHintedEndpoints(t, svc.Name, 80, gone, zoneOnly(pod2), zoneOnly(pod4))
		servedBy(t, vip, []string{pod2.ip}, "pod2")
	})
}

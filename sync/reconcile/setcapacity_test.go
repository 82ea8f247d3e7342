package reconcile

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestSetsMadeToKubeProxysCapacity: sets are made, or remade with their members, with
// kube-proxy's maxelem while the members fit, so that its IPVS mode can adopt them on a
// rollback (its `ipset create ... -exist` fails on any other maxelem). A set an earlier
// version made with 262,144 is remade smaller; one made too small for its members is
// remade larger, and a partial sync grows a set whose members outgrew it.
func TestSetsMadeToKubeProxysCapacity(t *testing.T) {
	fake := kernel.NewFake()
	if err := fake.Load(`# ipset save
create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 262144
add KUBE-CLUSTER-IP 10.96.0.10,tcp:80
create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 1
add KUBE-IPVS-IPS 10.96.0.10
`); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, kernel.Kernel{}, fake)
	for _, n := range []string{"a", "b"} {
		vip := map[string]string{"a": "10.96.0.10", "b": "10.96.0.11"}[n]
		h.src.SetService(svc("ns", n, vip, 80, v1.ProtocolTCP))
		h.src.SetSlice(slice("ns", n, n+"-1", 8080, v1.ProtocolTCP, "10.244.0.1"))
	}
	h.tracker.AllChanged()
	h.mustSync(t)
	dump := fake.Dump()
	for _, want := range []string{
		"create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536",
		"create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536",
		"add KUBE-IPVS-IPS 10.96.0.10", "add KUBE-IPVS-IPS 10.96.0.11", "add KUBE-CLUSTER-IP 10.96.0.11,tcp:80",
	} {
		if !strings.Contains(dump, want+"\n") {
			t.Errorf("no %q after the first sync:\n%s", want, dump)
		}
	}
	if n := fake.Ops()["ResizeSet"]; n != 2 {
		t.Errorf("%d sets remade, want 2", n)
	}

	// A set left too small for what a partial sync adds (as if its members had outgrown
	// the capacity the last full sync made it with) is grown before the adds.
	small := strings.Replace(dump, "create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536", "create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 2", 1)
	if err := fake.Load(small); err != nil {
		t.Fatal(err)
	}
	h.syncer.setCaps["KUBE-IPVS-IPS"] = 2
	h.src.SetService(svc("ns", "c", "10.96.0.12", 80, v1.ProtocolTCP))
	h.src.SetSlice(slice("ns", "c", "c-1", 8080, v1.ProtocolTCP, "10.244.0.1"))
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "c"})
	h.mustSync(t)
	if dump := fake.Dump(); !strings.Contains(dump, "add KUBE-IPVS-IPS 10.96.0.12\n") || !strings.Contains(dump, "create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\n") {
		t.Errorf("the partial sync's add did not fit:\n%s", dump)
	}
}

// TestCapacityForWaitsToShrink: a set grows as soon as its members need it, and shrinks
// only with a margin, so members moving back and forth across a doubling boundary (a
// Service added and deleted) do not remake it each time; a set not made by us yet gets
// what its members need.
func TestCapacityForWaitsToShrink(t *testing.T) {
	for _, c := range []struct {
		last uint32
		n    int
		want uint32
	}{
		{0, 131072, 262144},       // not made yet
		{0, 100, 65536},           // kube-proxy's, while the members fit
		{262144, 262145, 1048576}, // grows once they do not fit
		{524288, 131072, 524288},  // one member back across the boundary: kept
		{524288, 124000, 524288},  // within a sixteenth of it: kept
		{524288, 100000, 262144},  // well below: shrinks
		{65536, 65537, 262144},
		{262144, 65536, 262144}, // back to kube-proxy's 65,536 members: kept
		{262144, 60000, 65536},  // well below: kube-proxy's again
	} {
		if got := capacityFor(c.last, c.n); got != c.want {
			t.Errorf("capacityFor(%d, %d) = %d, want %d", c.last, c.n, got, c.want)
		}
	}
}

// TestCapacityForGrowsWhenFull: a set made with room for twice its members is not remade
// while they still fit: the first add past a power of two (131,073 hairpin entries at
// 100,000 Services × 2) remade it with every member copied, holding up that change.
func TestCapacityForGrowsWhenFull(t *testing.T) {
	for _, c := range []struct {
		last uint32
		n    int
		want uint32
	}{
		{262144, 131073, 262144}, // more than half, still fits: kept
		{262144, 262144, 262144}, // full: kept
		{262144, 262145, 1048576},
		{65536, 65537, 262144}, // past kube-proxy's: at least twice the members
	} {
		if got := capacityFor(c.last, c.n); got != c.want {
			t.Errorf("capacityFor(%d, %d) = %d, want %d", c.last, c.n, got, c.want)
		}
	}
}

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
	h.syncer.sets.RecordCapacity("KUBE-IPVS-IPS", 2)
	h.src.SetService(svc("ns", "c", "10.96.0.12", 80, v1.ProtocolTCP))
	h.src.SetSlice(slice("ns", "c", "c-1", 8080, v1.ProtocolTCP, "10.244.0.1"))
	h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "c"})
	h.mustSync(t)
	if dump := fake.Dump(); !strings.Contains(dump, "add KUBE-IPVS-IPS 10.96.0.12\n") || !strings.Contains(dump, "create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\n") {
		t.Errorf("the partial sync's add did not fit:\n%s", dump)
	}
}

package reconcile

import (
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// TestMemberDeletesBeforeAdds: a source range widened (192.0.2.128/25 to 192.0.2.0/24)
// is a delete and an add of overlapping elements, which an nftables interval set takes
// only in that order (a recent kernel refuses the wider one while the narrower is there):
// a partial sync writes every delete before any add.
func TestMemberDeletesBeforeAdds(t *testing.T) {
	var order []kernel.SetOp
	fake := kernel.NewFake()
	k := kernel.Wrap(fake.Kernel(), kernel.Hooks{Write: func(op any) error {
		if o, ok := op.(kernel.SetOp); ok {
			order = append(order, o)
		}
		return nil
	}})
	h := newHarness(t, k, fake)
	lb := func(ranges string) {
		t.Helper()
		text := `apiVersion: v1
kind: Service
metadata: {namespace: ns, name: lb}
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.30
  loadBalancerSourceRanges: [` + ranges + `]
  ports: [{port: 443, protocol: TCP, nodePort: 30443}]
status:
  loadBalancer: {ingress: [{ip: 198.51.100.30}, {ip: 198.51.100.31}]}
`
		if _, err := source.LoadObjects(strings.NewReader(text), h.src, testNode); err != nil {
			t.Fatal(err)
		}
		h.tracker.ServiceChanged(proxier.ServiceKey{Namespace: "ns", Name: "lb"})
		h.mustSync(t)
	}
	lb("192.0.2.128/25, 10.1.0.0/16, 203.0.113.7/32")
	order = nil
	lb("192.0.2.0/24, 10.0.0.0/8, 203.0.113.0/24")
	adds := 0
	for _, o := range order {
		switch {
		case !o.Delete:
			adds++
		case adds > 0:
			t.Fatalf("a delete after an add: %v", order)
		}
	}
	if adds != 6 || len(order) != 12 {
		t.Errorf("writes %v: want 6 deletes, then 6 adds", order)
	}
}

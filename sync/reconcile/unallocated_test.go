package reconcile

import (
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestUnallocatedClusterIPs: the check rejects the service CIDRs outside every Service's
// ClusterIPs; the ranges come from --service-cluster-ip-range until the cluster's
// ServiceCIDR objects are known, and follow them after; a Service of another proxy
// still counts as allocated.
func TestUnallocatedClusterIPs(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) {
		o.Config.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}
	})
	h.src.SetService(svc("ns", "a", "10.96.0.10", 80, v1.ProtocolTCP))
	other := svc("ns", "b", "10.96.0.11", 80, v1.ProtocolTCP)
	other.Labels = map[string]string{proxier.LabelServiceProxyName: "someone-else"}
	h.src.SetService(other)
	h.mustSync(t)
	const check = "-A KUBE-CLUSTER-IPS-CHECK -d %s -m set ! --match-set KUBE-SERVICE-IPS dst"
	if r := h.rules(t); !strings.Contains(r, strings.Replace(check, "%s", "10.96.0.0/12", 1)) {
		t.Errorf("the flag's range: rules\n%s", r)
	}
	d := h.fake.Dump()
	for _, ip := range []string{"10.96.0.10", "10.96.0.11"} {
		if !strings.Contains(d, "add KUBE-SERVICE-IPS "+ip) {
			t.Errorf("%s is not in KUBE-SERVICE-IPS:\n%s", ip, d)
		}
	}
	if strings.Contains(d, "10.96.0.11:80") {
		t.Errorf("another proxy's Service was programmed:\n%s", d)
	}
	h.src.SetServiceCIDRs([]netip.Prefix{netip.MustParsePrefix("10.96.0.0/16"), netip.MustParsePrefix("10.200.0.0/16")})
	h.tracker.AllChanged()
	h.mustSync(t)
	if r := h.rules(t); !strings.Contains(r, strings.Replace(check, "%s", "10.96.0.0/16", 1)) ||
		!strings.Contains(r, strings.Replace(check, "%s", "10.200.0.0/16", 1)) || strings.Contains(r, "10.96.0.0/12") {
		t.Errorf("the ServiceCIDR objects' ranges: rules\n%s", r)
	}
}

package proxier

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// TestSourceRangesByFamily: loadBalancerSourceRanges are split by family before the /0
// check, as kube-proxy's MapCIDRsByIPFamily does. A /0 of the other family once removed
// the IPv4 firewall entirely.
func TestSourceRangesByFamily(t *testing.T) {
	sl := makeSlice("ns", "s", "s1", v1.ProtocolTCP, ep{ip: "10.180.0.1"})
	sl6 := makeSlice("ns", "s", "s2", v1.ProtocolTCP, ep{ip: "fd00::10"})
	cases := []struct {
		name       string
		ranges     []string
		dual       bool
		fw, cidrs  []string // KUBE-LOAD-BALANCER-FW and -SOURCE-CIDR members (IPv4)
		fw6, cidr6 []string
		probs      []string
	}{
		{name: "other family's /0 keeps the IPv4 firewall", ranges: []string{"203.0.113.0/24", "::/0"},
			fw: []string{"1.2.3.4,tcp:80"}, cidrs: []string{"1.2.3.4,tcp:80,203.0.113.0/24"}},
		{name: "own family's /0 opens it", ranges: []string{"203.0.113.0/24", "0.0.0.0/0"}},
		{name: "no range of the family: open, and said", ranges: []string{"2001:db8::/32"}, probs: []string{"SourceRangesMissingFamily"}},
		{name: "a range that does not parse fails closed", ranges: []string{"203.0.113.0/33"},
			fw: []string{"1.2.3.4,tcp:80"}, probs: []string{"InvalidSourceRange"}},
		{name: "a range inside another is merged into it", ranges: []string{"10.1.0.0/16", "203.0.113.0/24", "10.0.0.0/8", "10.1.2.3/32", "203.0.113.0/24"},
			fw: []string{"1.2.3.4,tcp:80"}, cidrs: []string{"1.2.3.4,tcp:80,10.0.0.0/8", "1.2.3.4,tcp:80,203.0.113.0/24"}},
		{name: "an IPv4-mapped range is its IPv4 range", ranges: []string{"::ffff:203.0.113.0/120"},
			fw: []string{"1.2.3.4,tcp:80"}, cidrs: []string{"1.2.3.4,tcp:80,203.0.113.0/24"}},
		{name: "an IPv4-mapped range wider than the mapped space fails closed", ranges: []string{"::ffff:0:0/80"},
			fw: []string{"1.2.3.4,tcp:80"}, probs: []string{"InvalidSourceRange"}},
		{name: "dual-stack: IPv4 filtered, IPv6 open by its /0", ranges: []string{"203.0.113.0/24", "::/0"}, dual: true,
			fw: []string{"1.2.3.4,tcp:80"}, cidrs: []string{"1.2.3.4,tcp:80,203.0.113.0/24"}},
		{name: "dual-stack: each family its own", ranges: []string{"203.0.113.0/24", "2001:db8::/32"}, dual: true,
			fw: []string{"1.2.3.4,tcp:80"}, cidrs: []string{"1.2.3.4,tcp:80,203.0.113.0/24"},
			fw6: []string{"2001:db8:1::4,tcp:80"}, cidr6: []string{"2001:db8:1::4,tcp:80,2001:db8::/32"}},
		{name: "dual-stack: IPv6 without ranges is said", ranges: []string{"203.0.113.0/24"}, dual: true,
			fw: []string{"1.2.3.4,tcp:80"}, cidrs: []string{"1.2.3.4,tcp:80,203.0.113.0/24"}, probs: []string{"SourceRangesMissingFamily"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := makeService("ns", "s", withLB("1.2.3.4"), func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = tc.ranges })
			slices := []*discovery.EndpointSlice{sl}
			if tc.dual {
				svc = makeService("ns", "s", withClusterIPs("10.20.30.41", "fd00::41"), withLB("1.2.3.4", "2001:db8:1::4"),
					func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = tc.ranges })
				slices = append(slices, sl6)
			}
			st := translate(testConfig(), svc, slices...)
			check := func(set string, want []string) {
				if got := members(st, set); !equalOrEmpty(got, want) {
					t.Errorf("%s = %v, want %v", set, got, want)
				}
			}
			check("KUBE-LOAD-BALANCER-FW", tc.fw)
			check("KUBE-LOAD-BALANCER-SOURCE-CIDR", tc.cidrs)
			check(SetName("KUBE-LOAD-BALANCER-FW", kernel.IPv6), tc.fw6)
			check(SetName("KUBE-LOAD-BALANCER-SOURCE-CIDR", kernel.IPv6), tc.cidr6)
			if got := reasons(st); !equalOrEmpty(got, tc.probs) {
				t.Errorf("problems %v, want %v", st.Problems, tc.probs)
			}
			for _, p := range st.Problems {
				if p.Reason == "SourceRangesMissingFamily" && !strings.Contains(p.Message, "is not filtered") {
					t.Errorf("message %q", p.Message)
				}
			}
		})
	}
}

func equalOrEmpty(a, b []string) bool { return len(a) == 0 && len(b) == 0 || slices.Equal(a, b) }

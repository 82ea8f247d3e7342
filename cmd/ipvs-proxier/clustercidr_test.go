package main

import (
	"strings"
	"testing"
)

// TestClusterCIDRIsOneOrADualStackPair: clusterCIDR (and --cluster-cidr) holds one CIDR or
// one of each family, as kube-proxy's validation requires with detectLocalMode
// ClusterCIDR (pkg/proxy/apis/config/validation, validateDualStackCIDRStrings); two of
// one family or three are refused, never cut to the first.
func TestClusterCIDRIsOneOrADualStackPair(t *testing.T) {
	const msg = "must be a either a single CIDR or dual-stack pair of CIDRs"
	for _, tc := range []struct {
		name, conf string
		flags      []string
		want       string
	}{
		{name: "one", conf: "clusterCIDR: 10.244.0.0/16"},
		{name: "dual-stack pair", conf: "clusterCIDR: 10.244.0.0/16,fd00:10:244::/56"},
		{name: "two IPv4", conf: "clusterCIDR: 10.244.0.0/16,10.245.0.0/16", want: "clusterCIDR in f.conf: \"10.244.0.0/16,10.245.0.0/16\": " + msg},
		{name: "two IPv6", conf: "clusterCIDR: fd00:1::/56,fd00:2::/56", want: msg},
		{name: "three", conf: "clusterCIDR: 10.244.0.0/16,fd00:10:244::/56,10.245.0.0/16", want: msg},
		{name: "flag, two IPv4", flags: []string{"--cluster-cidr", "10.1.0.0/16,10.2.0.0/16"}, want: "--cluster-cidr: \"10.1.0.0/16,10.2.0.0/16\": " + msg},
		// kube-proxy checks clusterCIDR only for the ClusterCIDR detector.
		{name: "other detector", conf: "clusterCIDR: 10.1.0.0/16,10.2.0.0/16\ndetectLocalMode: NodeCIDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOptions("t")
			if err := o.fs.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			if tc.conf != "" {
				o.configFile = "f.conf"
				if _, err := o.applyConfig([]byte(confHead + tc.conf + "\n")); err != nil {
					t.Fatal(err)
				}
			}
			_, err := resolveNode(o)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

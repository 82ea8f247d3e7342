package main

import (
	"bytes"
	"net/netip"
	"os"
	"strings"
	"testing"
)

// TestNodePortAddressKeywords: nodePortAddresses takes kube-proxy's keywords
// (pkg/proxy/apis/config/validation, validateKubeProxyNodePortAddress) as kube-proxy's
// IPVS mode serves them (cmd/kube-proxy/app/server.go, expandNodePortAddressKeywords;
// pkg/proxy/ipvs/proxier.go): "all" is every address; "localhost" is 127.0.0.0/8 and
// ::1/128, on which IPVS serves no NodePort, so it is accepted with a warning and only
// names both families; a keyword given twice is refused.
func TestNodePortAddressKeywords(t *testing.T) {
	for _, tc := range []struct {
		name, value   string
		allowed, not  []string
		warning, fail string
	}{
		{name: "all", value: "all", allowed: []string{"192.168.7.7", "10.1.2.3", "fd00::7"}},
		{name: "all beside a CIDR", value: "10.0.0.0/8,all", allowed: []string{"192.168.7.7", "fd00::7"}},
		{name: "localhost", value: "localhost", not: []string{"192.168.7.7", "fd00::7"}, warning: "localhost"},
		{name: "localhost beside a CIDR", value: "localhost,192.168.0.0/16", allowed: []string{"192.168.7.7"},
			not: []string{"10.1.2.3", "fd00::7"}, warning: "localhost"},
		{name: "a keyword twice", value: "all,all", fail: `--nodeport-addresses: "all": Duplicate value`},
		{name: "not a keyword", value: "any", fail: `--nodeport-addresses: "any" is not a CIDR`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOptions("t")
			if err := o.fs.Parse([]string{"--nodeport-addresses", tc.value}); err != nil {
				t.Fatal(err)
			}
			r, err := resolveNode(o)
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Errorf("err %v, want %q", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, ip := range tc.allowed {
				if !r.cfg.NodePortAllowed(netip.MustParseAddr(ip)) {
					t.Errorf("no NodePorts on %s (%v)", ip, r.cfg.NodePortAddresses)
				}
			}
			for _, ip := range tc.not {
				if r.cfg.NodePortAllowed(netip.MustParseAddr(ip)) {
					t.Errorf("NodePorts on %s (%v)", ip, r.cfg.NodePortAddresses)
				}
			}
			if got := strings.Join(r.warnings, "\n"); tc.warning == "" && got != "" || !strings.Contains(got, tc.warning) {
				t.Errorf("warnings %q, want one naming %q", got, tc.warning)
			}
		})
	}
}

// TestPlanNodePortAddressKeywords: a config.conf with nodePortAddresses [all] plans as
// kube-proxy's default; [localhost] plans no NodePort virtual server and says why.
func TestPlanNodePortAddressKeywords(t *testing.T) {
	for _, tc := range []struct{ value, want, warn string }{
		{"all", "TCP  192.168.7.7:30443 sh", ""},
		{"localhost", "", "localhost"},
	} {
		conf := t.TempDir() + "/config.conf"
		if err := os.WriteFile(conf, []byte(confHead+"nodePortAddresses: ["+tc.value+"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		err := runPlanTo([]string{"-f", "../../examples/cluster.yaml", "--hostname-override", "test-node", "--node-ip", "192.168.7.7", "--config", conf}, &out, &errOut)
		if err != nil {
			t.Fatalf("%s: %v", tc.value, err)
		}
		if tc.want != "" && !strings.Contains(out.String(), tc.want) || tc.want == "" && strings.Contains(out.String(), ":30443") {
			t.Errorf("%s: NodePorts planned:\n%s", tc.value, out.String())
		}
		if tc.warn != "" && !strings.Contains(errOut.String(), tc.warn) {
			t.Errorf("%s: no warning naming %q:\n%s", tc.value, tc.warn, errOut.String())
		}
	}
}

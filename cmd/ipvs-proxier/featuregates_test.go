package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestFeatureGates: --feature-gates (kube-proxy's key=bool list) and config.conf's
// featureGates are checked as kube-proxy's gate set checks them
// (component-base/featuregate SetFromMap): an unknown name is an error, a locked gate
// set away from its value is an error, a value that is not a bool is an error.
// AllowServiceExternalIPs=false reaches the translation; any other known gate is named
// in one warning.
func TestFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		name, conf   string
		flags        []string
		ignoreExtIPs bool
		warn, not    []string
		fail         string
	}{
		{name: "none"},
		{name: "AllowServiceExternalIPs off by flag", flags: []string{"--feature-gates=AllowServiceExternalIPs=false"}, ignoreExtIPs: true},
		{name: "AllowServiceExternalIPs off in the file", conf: "featureGates: {AllowServiceExternalIPs: false}", ignoreExtIPs: true},
		{name: "AllowServiceExternalIPs on", flags: []string{"--feature-gates", "AllowServiceExternalIPs=true"}},
		{name: "two flags add up", flags: []string{"--feature-gates=ContextualLogging=false", "--feature-gates", " AllowServiceExternalIPs = false "},
			ignoreExtIPs: true, warn: []string{"ContextualLogging=false"}, not: []string{"AllowServiceExternalIPs"}},
		{name: "other gates in one warning", flags: []string{"--feature-gates=AllAlpha=true,KubeProxyNFTablesLocalhostNodePorts=true,WatchListClient=false"},
			warn: []string{"AllAlpha=true, KubeProxyNFTablesLocalhostNodePorts=true, WatchListClient=false"}},
		{name: "gates ipvs-proxier follows are not named", flags: []string{"--feature-gates=PreferSameTrafficDistribution=true,KubeProxyIPVS=true,MultiCIDRServiceAllocator=true"}},
		{name: "unknown gate", flags: []string{"--feature-gates=Foo=true"}, fail: "--feature-gates: unrecognized feature gate: Foo"},
		{name: "unknown gate in the file", conf: "featureGates: {Foo: true}", fail: "featureGates in f.conf: unrecognized feature gate: Foo"},
		{name: "not a bool", flags: []string{"--feature-gates=AllowServiceExternalIPs=maybe"}, fail: "invalid value of AllowServiceExternalIPs: maybe"},
		{name: "no value", flags: []string{"--feature-gates=AllowServiceExternalIPs"}, fail: "malformed pair, expect string=bool"},
		{name: "not a bool in the file", conf: "featureGates: {AllowServiceExternalIPs: maybe}", fail: "featureGates"},
		{name: "locked gate", flags: []string{"--feature-gates=PreferSameTrafficDistribution=false"},
			fail: "cannot set feature gate PreferSameTrafficDistribution to false, feature is locked to true"},
		{name: "IPVS mode off", conf: "featureGates: {KubeProxyIPVS: false}", fail: "featureGates in f.conf: KubeProxyIPVS=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOptions("t")
			err := o.fs.Parse(tc.flags)
			var warnings []string
			if err == nil && tc.conf != "" {
				o.configFile = "f.conf"
				warnings, err = o.applyConfig([]byte(confHead + tc.conf + "\n"))
			}
			var r *resolved
			if err == nil {
				r, err = resolveNode(o)
			}
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Errorf("err %v, want %q", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			warnings = append(append(warnings, o.kubeProxyWarnings()...), r.warnings...)
			if r.cfg.IgnoreExternalIPs != tc.ignoreExtIPs || r.sync.Config.IgnoreExternalIPs != tc.ignoreExtIPs {
				t.Errorf("IgnoreExternalIPs %v (sync %v), want %v", r.cfg.IgnoreExternalIPs, r.sync.Config.IgnoreExternalIPs, tc.ignoreExtIPs)
			}
			all := strings.Join(warnings, "\n")
			if len(tc.warn) == 0 && all != "" {
				t.Errorf("warnings %q, want none", all)
			}
			if strings.Count(all, "feature gate") > 1 {
				t.Errorf("more than one warning about feature gates: %q", all)
			}
			for _, w := range tc.warn {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q do not name %s", all, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(all, n) {
					t.Errorf("warnings %q name %s", all, n)
				}
			}
		})
	}
}

// TestPlanExternalIPsGate: plan, by flag or by config.conf, programs no externalIPs
// with AllowServiceExternalIPs=false, and says nothing about them.
func TestPlanExternalIPsGate(t *testing.T) {
	conf := t.TempDir() + "/config.conf"
	if err := os.WriteFile(conf, []byte(confHead+"featureGates:\n  AllowServiceExternalIPs: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"-f", "../../examples/cluster.yaml", "--hostname-override", "test-node"}
	var on bytes.Buffer
	if err := runPlanTo(base, &on, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(on.String(), "198.51.100.7") {
		t.Fatalf("the example's external IP is not planned with the gate on:\n%s", on.String())
	}
	for _, extra := range [][]string{{"--feature-gates=AllowServiceExternalIPs=false"}, {"--config", conf}} {
		var out, errOut bytes.Buffer
		if err := runPlanTo(append(base, extra...), &out, &errOut); err != nil {
			t.Fatal(extra, err)
		}
		if strings.Contains(out.String()+errOut.String(), "198.51.100.7") {
			t.Errorf("%v: external IP planned or reported:\n%s\n%s", extra, out.String(), errOut.String())
		}
		if !strings.Contains(out.String(), "UDP  100.101.102.103:30125") {
			t.Errorf("%v: the Service's NodePort is gone:\n%s", extra, out.String())
		}
	}
}

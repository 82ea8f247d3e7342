package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPlanTellsTheTruth: plan reads what kubectl accepts, notes what it skips, prints
// the daemon's problems to stderr (one line each, with namespace/name), warns when the
// Node is missing, and with --strict fails on problems.
func TestPlanTellsTheTruth(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runPlanTo([]string{"-f", "testdata/messy.yaml", "--hostname-override", "test-node"}, &out, &errOut)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"TCP  10.96.7.1:80 rr", "-> 10.244.0.7:8080"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, out.String())
		}
	}
	for _, want := range []string{
		"note: testdata/messy.yaml: document 3: kind example.com/v1, Kind=Widget is not a Service, EndpointSlice, Node or ServiceCIDR; skipped",
		"note: testdata/messy.yaml: document 4: EndpointSlice shop/orphan has no kubernetes.io/service-name label; skipped",
		"problem: Service shop/front: InvalidScheduler:",
		`warning: no Node "test-node" in the input`,
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	if err := runPlanTo([]string{"-f", "testdata/messy.yaml", "--hostname-override", "test-node", "--strict"}, &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), "1 problem(s)") {
		t.Errorf("--strict: %v", err)
	}

	out.Reset()
	errOut.Reset()
	if err := runPlanTo([]string{"-f", "testdata/concatenated.json", "--hostname-override", "test-node", "--strict"}, &out, &errOut); err != nil {
		t.Fatalf("concatenated JSON: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"TCP  10.96.7.2:81", "TCP  10.96.7.3:82"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("concatenated JSON: plan lacks %q:\n%s", want, out.String())
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("clean input, yet stderr:\n%s", errOut.String())
	}
}

// TestPlanVIPLocalRoutes: with --vip-local-routes plan prints the Service IPs as the
// local routes the daemon makes (`ip route show table local proto 210`), not as
// addresses on kube-ipvs0, which the daemon then leaves empty.
func TestPlanVIPLocalRoutes(t *testing.T) {
	in := twoServices + `---
apiVersion: v1
kind: Service
metadata: {name: v6, namespace: ns}
spec: {clusterIP: "fd00::8:3", ipFamilies: [IPv6], ports: [{port: 80}]}
`
	for _, tt := range []struct {
		name      string
		args      []string
		want, not []string
	}{
		{"addresses", nil,
			[]string{"# addresses on kube-ipvs0\ninet 10.96.8.1/32 scope global kube-ipvs0\ninet 10.96.8.2/32 scope global kube-ipvs0\ninet6 fd00::8:3/128 scope global kube-ipvs0\n"},
			[]string{"local 10.96.8.1", "local routes"}},
		{"routes", []string{"--vip-local-routes"},
			[]string{"local 10.96.8.1 dev lo scope host\nlocal 10.96.8.2 dev lo scope host\nlocal fd00::8:3 dev lo metric 1024 pref medium\n"},
			[]string{"kube-ipvs0"}},
	} {
		out, errOut, err := planOf(t, []byte(in), tt.args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tt.name, err, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: plan lacks %q:\n%s", tt.name, w, out)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(out, n) {
				t.Errorf("%s: plan has %q:\n%s", tt.name, n, out)
			}
		}
	}
}

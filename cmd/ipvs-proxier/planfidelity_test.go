package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

// planOf runs plan on input (written to a file) and returns stdout, stderr and the error.
func planOf(t *testing.T, input []byte, args ...string) (string, string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(f, input, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := runPlanTo(append([]string{"-f", f, "--hostname-override", "test-node", "--node-ip", "10.0.2.15"}, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

const twoServices = `apiVersion: v1
kind: Service
metadata: {name: a, namespace: ns}
spec: {clusterIP: 10.96.8.1, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: b, namespace: ns}
spec: {clusterIP: 10.96.8.2, ports: [{port: 80}]}
`

// TestPlanReadsUTF16: a file PowerShell's `>` wrote (UTF-16 with a byte-order mark)
// gives every document, not the first alone.
func TestPlanReadsUTF16(t *testing.T) {
	for name, bom := range map[string][]byte{"LE": {0xff, 0xfe}, "BE": {0xfe, 0xff}} {
		u := utf16.Encode([]rune(strings.ReplaceAll(twoServices, "\n", "\r\n")))
		in := append([]byte{}, bom...)
		for _, c := range u {
			if name == "LE" {
				in = append(in, byte(c), byte(c>>8))
			} else {
				in = append(in, byte(c>>8), byte(c))
			}
		}
		out, errOut, err := planOf(t, in)
		if err != nil || !strings.Contains(out, "TCP  10.96.8.1:80") || !strings.Contains(out, "TCP  10.96.8.2:80") {
			t.Errorf("UTF-16%s: %v\n%s\n%s", name, err, out, errOut)
		}
	}
}

// TestPlanRefusesWhatTheAPIServerRefuses: a duplicate key (the apiserver's strict
// decoding refuses it), NUL bytes, and a document without end are errors, not a
// silently different plan or a process that eats the node's memory.
func TestPlanRefusesWhatTheAPIServerRefuses(t *testing.T) {
	dup := "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: ns}\nspec:\n  clusterIP: 10.96.8.1\n  clusterIP: 10.96.8.9\n  ports: [{port: 80}]\n"
	if _, _, err := planOf(t, []byte(dup)); err == nil || !strings.Contains(err.Error(), "already set") && !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate key: %v, want an error naming it", err)
	}
	if _, _, err := planOf(t, make([]byte, 1<<20)); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("zeros: %v, want the NUL error", err)
	}
	// /dev/zero itself: refused at its first bytes.
	var out, errOut bytes.Buffer
	if err := runPlanTo([]string{"-f", "/dev/zero", "--hostname-override", "n"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("/dev/zero: %v", err)
	}
}

// TestPlanSkipsHeadlessSlices: a slice labelled service.kubernetes.io/headless is not
// watched by the daemon, so plan does not use it either, and says so.
func TestPlanSkipsHeadlessSlices(t *testing.T) {
	in := twoServices + `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: a-1
  namespace: ns
  labels: {kubernetes.io/service-name: a, service.kubernetes.io/headless: ""}
addressType: IPv4
endpoints: [{addresses: [10.244.0.9]}]
ports: [{port: 8080}]
`
	out, errOut, err := planOf(t, []byte(in))
	if err != nil || strings.Contains(out, "10.244.0.9") || !strings.Contains(errOut, "service.kubernetes.io/headless; skipped") {
		t.Errorf("headless slice: %v\n%s\n%s", err, out, errOut)
	}
}

// TestPlanSetCapacity: past 65,536 members a set is printed with the capacity the daemon
// makes it with (proxier.SetCapacity), not kube-proxy's 65,536.
func TestPlanSetCapacity(t *testing.T) {
	var b strings.Builder
	for i := range 70000 {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Service\nmetadata: {name: s%d, namespace: ns}\nspec: {clusterIP: 10.%d.%d.%d, ports: [{port: 80}]}\n",
			i, 96+i>>16, i>>8&255, i&255)
	}
	out, errOut, err := planOf(t, []byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 262144") {
		i := strings.Index(out, "create KUBE-CLUSTER-IP ")
		t.Errorf("KUBE-CLUSTER-IP with 70,000 members: %.120s, want maxelem 262144", out[max(i, 0):])
	}
	if !strings.Contains(out, "create KUBE-NODE-PORT-TCP") || strings.Contains(out, "create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 262144") {
		t.Error("a small set was sized as a large one")
	}
}

// TestPlanHostSourceRange: a /32 source range prints as the kernel's `ipset save` shows
// it, the address alone.
func TestPlanHostSourceRange(t *testing.T) {
	in := `apiVersion: v1
kind: Service
metadata: {name: lb, namespace: ns}
spec: {type: LoadBalancer, clusterIP: 10.96.8.1, ports: [{port: 80, nodePort: 30080}], loadBalancerSourceRanges: [10.0.2.15/32, 192.168.0.0/16]}
status: {loadBalancer: {ingress: [{ip: 203.0.113.7}]}}
`
	out, errOut, err := planOf(t, []byte(in))
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{"add KUBE-LOAD-BALANCER-SOURCE-CIDR 203.0.113.7,tcp:80,10.0.2.15\n", "add KUBE-LOAD-BALANCER-SOURCE-CIDR 203.0.113.7,tcp:80,192.168.0.0/16\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanRefusesLoopbackDevice: --dummy-device lo is refused, as the daemon refuses it.
func TestPlanRefusesLoopbackDevice(t *testing.T) {
	if _, _, err := planOf(t, []byte(twoServices), "--dummy-device", "lo"); err == nil || !strings.Contains(err.Error(), "--dummy-device") {
		t.Errorf("--dummy-device lo: %v", err)
	}
}

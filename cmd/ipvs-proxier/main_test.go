package main

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestPlanExample: `ipvs-proxier plan -f examples/cluster.yaml` matches its golden output.
func TestPlanExample(t *testing.T) {
	var out bytes.Buffer
	err := runPlan([]string{"-f", "../../examples/cluster.yaml", "--hostname-override", "test-node", "--cluster-cidr", "10.244.0.0/16"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	const golden = "../../examples/cluster.plan"
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("plan output differs from %s (-update to rewrite after checking):\n%s", golden, out.String())
	}
	for _, must := range []string{"TCP  10.96.0.10:80 rr", "inet 10.96.0.10/32 scope global kube-ipvs0", "add KUBE-CLUSTER-IP 10.96.0.10,tcp:80", "*nat"} {
		if !strings.Contains(out.String(), must) {
			t.Errorf("plan lacks %q", must)
		}
	}
}

// TestPlanNodeIPFlag: --node-ip replaces the Node's addresses for NodePorts.
func TestPlanNodeIPFlag(t *testing.T) {
	var out bytes.Buffer
	if err := runPlan([]string{"-f", "../../examples/cluster.yaml", "--hostname-override", "test-node", "--node-ip", "192.168.7.7"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "TCP  192.168.7.7:30443 sh") || strings.Contains(out.String(), "100.101.102.103:30443") {
		t.Errorf("NodePort not on --node-ip:\n%s", out.String())
	}
}

// TestKubeadmConfigDecodes: a kube-proxy ConfigMap as kubeadm writes it is taken as is.
func TestKubeadmConfigDecodes(t *testing.T) {
	o := newOptions("t")
	if err := o.fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	warnings, err := o.applyConfigFile("testdata/kubeadm-kube-proxy.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings for a stock kubeadm config: %v", warnings)
	}
	if o.clusterCIDR != "10.244.0.0/16" || !o.strictARP || o.kubeconfig != "/var/lib/kube-proxy/kubeconfig.conf" ||
		o.scheduler != "rr" || o.syncPeriod != 30*time.Second || o.minSyncPeriod != time.Second {
		t.Errorf("decoded %+v", o)
	}
}

// TestConfigUnsupported: config fields ipvs-proxier does not use are named in one
// warning; the ones it uses are taken.
func TestConfigUnsupported(t *testing.T) {
	o := newOptions("t")
	if err := o.fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	warnings, err := o.applyConfig([]byte(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
ipvs: {scheduler: sh, syncPeriod: 10s, minSyncPeriod: 2s, excludeCIDRs: [3.3.3.0/24]}
winkernel: {enableDSR: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	if o.scheduler != "sh" || o.syncPeriod != 10*time.Second || o.minSyncPeriod != 2*time.Second || len(o.excludeCIDRs) != 1 {
		t.Errorf("got scheduler %s sync %v min %v exclude %v", o.scheduler, o.syncPeriod, o.minSyncPeriod, o.excludeCIDRs)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "winkernel.enableDSR") || !strings.Contains(warnings[0], "mode=iptables") {
		t.Errorf("warnings %v", warnings)
	}
}

// TestResolveValidates: bad flags fail at start with a clear message.
func TestResolveValidates(t *testing.T) {
	host := func() (string, error) { return "Node-1", nil }
	cases := map[string][]string{
		"--scheduler":              {"--scheduler", "fastest"},
		"--cluster-cidr":           {"--cluster-cidr", "10.0.0.0/33"},
		"--min-sync-period":        {"--min-sync-period", "1m", "--sync-period", "30s"},
		"--node-ip":                {"--node-ip", "x"},
		"--ipvs-exclude-cidrs":     {"--ipvs-exclude-cidrs", "nope"},
		"--max-endpoints-per-port": {"--max-endpoints-per-port", "0"},
		// 0-31 are valid, as in kube-proxy.
		"--iptables-masquerade-bit": {"--iptables-masquerade-bit", "32"},
	}
	for want, args := range cases {
		o := newOptions("t")
		if err := o.fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if _, err := o.resolve(host); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: err %v, want one naming %s", args, err, want)
		}
	}
	o := newOptions("t")
	_ = o.fs.Parse(nil)
	r, err := o.resolve(host)
	if err != nil || r.nodeName != "node-1" {
		t.Errorf("default resolve: %v %+v", err, r)
	}
}

// TestMissingKubeconfigNamesTheField: kubeadm's config.conf pasted without its
// kubeconfig.conf fails with the field and the file named, not a bare stat error.
func TestMissingKubeconfigNamesTheField(t *testing.T) {
	o := newOptions("t")
	if err := o.fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	o.configFile = "testdata/kubeadm-kube-proxy.conf"
	if _, err := o.applyConfigFile(o.configFile); err != nil {
		t.Fatal(err)
	}
	_, _, err := restConfig(o)
	if err == nil || !strings.Contains(err.Error(), "clientConnection.kubeconfig in testdata/kubeadm-kube-proxy.conf: stat /var/lib/kube-proxy/kubeconfig.conf") ||
		!strings.Contains(err.Error(), "kubeconfig.conf key") {
		t.Errorf("missing kubeconfig from the file: %v", err)
	}
	o = newOptions("t")
	if err := o.fs.Parse([]string{"--kubeconfig", "/nonexistent/kc"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := restConfig(o); err == nil || !strings.HasPrefix(err.Error(), "--kubeconfig: stat /nonexistent/kc") {
		t.Errorf("missing kubeconfig from the flag: %v", err)
	}
}

// TestConfigErrorsNameTheField: a bad value from --config is reported under its config
// field and file, not under a flag the user never typed; negative durations are
// rejected, as kube-proxy's validation does, not replaced by defaults.
func TestConfigErrorsNameTheField(t *testing.T) {
	host := func() (string, error) { return "n", nil }
	cases := []struct{ name, conf, want string }{
		{"bad CIDR", "nodePortAddresses: [abc]", `nodePortAddresses in f.conf: "abc" is not a CIDR`},
		{"bad cluster CIDR", "clusterCIDR: 10.0.0.0/40", `clusterCIDR in f.conf: "10.0.0.0/40" is not a CIDR`},
		{"bad scheduler", "ipvs: {scheduler: fastest}", `ipvs.scheduler in f.conf: unknown IPVS scheduler "fastest"`},
		{"bad masquerade bit", "iptables: {masqueradeBit: 40}", `iptables.masqueradeBit in f.conf: 40 not in 0-31`},
		{"bad bind address", "bindAddress: abc", `bindAddress in f.conf: "abc" is not an IP address`},
		{"negative sync period", "ipvs: {syncPeriod: -5s}", "config: ipvs.syncPeriod -5s: must not be negative"},
		{"negative iptables min sync period", "iptables: {minSyncPeriod: -1s}", "config: iptables.minSyncPeriod -1s: must not be negative"},
		{"negative tcp timeout", "ipvs: {tcpTimeout: -1m}", "config: ipvs.tcpTimeout -1m0s: must not be negative"},
		{"negative conntrack min", "conntrack: {min: -1}", "config: conntrack.min -1: must not be negative"},
		{"negative conntrack timeout", "conntrack: {udpTimeout: -1s}", "config: conntrack.udpTimeout -1s: must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := newOptions("t")
			if err := o.fs.Parse(nil); err != nil {
				t.Fatal(err)
			}
			o.configFile = "f.conf"
			_, err := o.applyConfig([]byte(confHead + tc.conf + "\n"))
			if err == nil {
				_, err = o.resolve(host)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
	// The same value from a flag (without --config) is named by the flag.
	o := newOptions("t")
	if err := o.fs.Parse([]string{"--nodeport-addresses", "abc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.resolve(host); err == nil || !strings.HasPrefix(err.Error(), `--nodeport-addresses: "abc"`) {
		t.Errorf("flag value: %v", err)
	}
}

// TestCommandLineTypos: a typo'd subcommand or a stray word never starts the daemon
// (runDaemon would touch the kernel); both exit 2 before anything runs.
func TestCommandLineTypos(t *testing.T) {
	for _, args := range [][]string{{"stauts"}, {"--log-level", "info", "extra"}, {"plan", "-f", "x.yaml", "extra"},
		{"status", "now"}, {"cleanup", "all"}} {
		if code := run(args); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

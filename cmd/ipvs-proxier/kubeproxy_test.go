package main

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// kubeProxyFlagFile reads testdata/kube-proxy-v1.37-flags.txt: each flag's name and type.
func kubeProxyFlagFile(t *testing.T) [][2]string {
	t.Helper()
	f, err := os.Open("testdata/kube-proxy-v1.37-flags.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			name, typ, _ := strings.Cut(l, " ")
			out = append(out, [2]string{name, typ})
		}
	}
	return out
}

// TestEveryKubeProxyFlagIsAccepted: each of kube-proxy v1.37's flags parses (none is
// "unknown flag", so a reused command line never crash-loops), and each is either one
// ipvs-proxier honours or named in the one warning.
func TestEveryKubeProxyFlagIsAccepted(t *testing.T) {
	values := map[string]string{"bool": "true", "duration": "2s", "int32": "2", "float32": "2", "string": "x", "ip": "10.0.0.1",
		"ipport": "0.0.0.0:1", "strings": "10.0.0.0/8", "LocalMode": "ClusterCIDR", "mapStringBool": "AllAlpha=false", "quantity": "1Mi",
		"ProxyMode": "ipvs", "Level": "2", "version": "true", "pattern=N": "foo=2"}
	n := 0
	for _, flag := range kubeProxyFlagFile(t) {
		name, typ := flag[0], flag[1]
		v, ok := values[typ]
		if !ok {
			t.Fatalf("no test value for type %q (--%s)", typ, name)
		}
		n++
		o := newOptions("t")
		if err := o.fs.Parse([]string{"--" + name + "=" + v}); err != nil {
			t.Errorf("--%s=%s: %v", name, v, err)
			continue
		}
		if typ == "bool" && slices.Contains(kubeProxyOnly, name) {
			// A boolean given alone, as installers write them.
			b := newOptions("t")
			if err := b.fs.Parse([]string{"--" + name}); err != nil {
				t.Errorf("--%s alone: %v", name, err)
			}
		}
		warned := strings.Contains(strings.Join(o.kubeProxyWarnings(), " "), "--"+name+"=")
		if ignored := slices.Contains(kubeProxyOnly, name); warned != ignored {
			t.Errorf("--%s: named in the warning %v, but accepted-and-unused %v", name, warned, ignored)
		}
	}
	if n < 55 {
		t.Errorf("only %d flags in the list", n)
	}
}

// TestInstallerCommandLines: the kube-proxy command lines (and config.conf files) that
// real installers write start the daemon's option parsing with the intended settings.
func TestInstallerCommandLines(t *testing.T) {
	cases := []struct {
		fixture, conf string
		check         func(*options, *resolved) bool
		warn          string // a substring of the warnings, "" for none
	}{
		{"kubeadm", "../kubeadm-kube-proxy.conf", func(o *options, r *resolved) bool {
			return r.nodeName == "node-7" && o.kubeconfig == "/var/lib/kube-proxy/kubeconfig.conf" && o.clusterCIDR == "10.244.0.0/16" && o.strictARP
		}, ""},
		{"eks", "eks.conf", func(o *options, r *resolved) bool {
			return r.nodeName == "node-7" && o.logLevel == "info" && o.kubeconfig == "/var/lib/kube-proxy/kubeconfig" &&
				o.metricsAddr == "0.0.0.0:10249" && o.scheduler == "rr" && o.syncPeriod == 30*time.Second && o.conntrackPerCore == 32768 &&
				o.conntrack.TCPEstablished == 24*time.Hour && o.conntrack.TCPCloseWait == time.Hour
		}, ""},
		{"kops", "", func(o *options, r *resolved) bool {
			return r.nodeName == "i-0123456789abcdef0" && o.master == "https://api.internal.example.k8s.local" && o.kp.oomScoreAdj == -998 &&
				o.conntrackPerCore == 131072 && o.clusterCIDR == "100.96.0.0/11" && o.scheduler == "rr"
		}, ""},
		{"kubespray", "kubespray.conf", func(o *options, r *resolved) bool {
			return r.nodeName == "node-7" && o.clusterCIDR == "10.233.64.0/18" && o.kubeconfig == "/var/lib/kube-proxy/kubeconfig.conf" &&
				o.conntrack.TCPEstablished == 24*time.Hour && o.conntrack.TCPCloseWait == time.Hour
		}, ""},
		{"docs", "", func(o *options, r *resolved) bool {
			return o.scheduler == "lc" && o.clusterCIDR == "10.244.0.0/16" && o.metricsAddr == "0.0.0.0:10249"
		}, "--feature-gates: feature gates with no effect on what ipvs-proxier programs, accepted: AllAlpha=false"},
	}
	for _, tc := range cases {
		t.Run(tc.fixture, func(t *testing.T) {
			args := readArgs(t, filepath.Join("testdata/installers", tc.fixture+".args"))
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "$(NODE_NAME)", "node-7")
			}
			o := newOptions("t")
			if err := o.fs.Parse(args[1:]); err != nil { // args[0] is the program
				t.Fatalf("parse %v: %v", args, err)
			}
			warnings := o.kubeProxyWarnings()
			if tc.conf != "" {
				w, err := o.applyConfigFile(filepath.Join("testdata/installers", tc.conf))
				if err != nil {
					t.Fatal(err)
				}
				warnings = append(warnings, w...)
			}
			r, err := o.resolve(func() (string, error) { return "host", nil })
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(o, r) {
				t.Errorf("settings not in effect: %+v", o)
			}
			got := strings.Join(append(warnings, r.warnings...), "\n")
			if tc.warn == "" && got != "" || !strings.Contains(got, tc.warn) {
				t.Errorf("warnings %q, want %q", got, tc.warn)
			}
		})
	}
}

func readArgs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

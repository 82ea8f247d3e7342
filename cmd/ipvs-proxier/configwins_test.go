package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// TestConfigFileWinsOverFlags: beside --config, kube-proxy's flags that set a config field
// are ignored and the file (or kube-proxy's default) wins, as kube-proxy's Options.Complete
// replaces its flag-filled config with the file's (cmd/kube-proxy/app/options.go); the
// ones it still reads (--hostname-override, --master, -v, --cleanup, --init-only) act,
// and so do ipvs-proxier's own flags. The ignored flags are named in one warning.
func TestConfigFileWinsOverFlags(t *testing.T) {
	o := newOptions("t")
	if err := o.fs.Parse([]string{"--ipvs-scheduler", "lc", "--sync-period", "1m", "--masquerade-all",
		"--nodeport-addresses", "10.0.0.0/8", "--kubeconfig", "/etc/kp.kubeconfig", "--proxy-mode", "iptables",
		"--metrics-bind-address", "0.0.0.0:1", "--hostname-override", "Node-X", "--master", "https://api:6443",
		"-v", "4", "--rules-backend", "nftables", "--vip-local-routes", "--max-endpoints-per-port", "7"}); err != nil {
		t.Fatal(err)
	}
	o.configFile = "f.conf"
	warnings, err := o.applyConfig([]byte(confHead + "hostnameOverride: node-file\nipvs: {scheduler: sh, syncPeriod: 10s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	warnings = append(warnings, o.kubeProxyWarnings()...)
	// The file's values, else kube-proxy's defaults.
	if o.scheduler != "sh" || o.syncPeriod != 10*time.Second || o.masqueradeAll || len(o.nodePortAddresses) != 0 ||
		o.kubeconfig != "" || o.kp.proxyMode != "" || o.metricsAddr != "127.0.0.1:10249" {
		t.Errorf("flags won over the file: scheduler %s sync %v masqueradeAll %v nodePortAddresses %v kubeconfig %q proxy-mode %q metrics %s",
			o.scheduler, o.syncPeriod, o.masqueradeAll, o.nodePortAddresses, o.kubeconfig, o.kp.proxyMode, o.metricsAddr)
	}
	// The flags kube-proxy still reads beside --config, and ours.
	if o.hostnameOverride != "Node-X" || o.master != "https://api:6443" || o.logLevel != "debug" ||
		o.rulesBackend != "nftables" || !o.vipLocalRoutes || o.maxEndpoints != 7 {
		t.Errorf("flags that act beside --config lost: hostname %q master %q log level %s rules backend %s vip routes %v max endpoints %d",
			o.hostnameOverride, o.master, o.logLevel, o.rulesBackend, o.vipLocalRoutes, o.maxEndpoints)
	}
	var line string
	for _, w := range warnings {
		if strings.Contains(w, "--config") {
			if line != "" {
				t.Errorf("more than one warning about --config: %q", warnings)
			}
			line = w
		}
	}
	for _, want := range []string{"--ipvs-scheduler=lc", "--sync-period=1m0s", "--masquerade-all=true", "--nodeport-addresses=[10.0.0.0/8]",
		"--kubeconfig=/etc/kp.kubeconfig", "--proxy-mode=iptables", "--metrics-bind-address=0.0.0.0:1"} {
		if !strings.Contains(line, want) {
			t.Errorf("warning %q does not name %s", line, want)
		}
	}
	for _, acts := range []string{"hostname-override", "master", "--v", "rules-backend", "vip-local-routes", "max-endpoints-per-port"} {
		if strings.Contains(line, acts) {
			t.Errorf("warning %q names --%s, which acts", line, acts)
		}
	}
	if strings.Contains(strings.Join(warnings, "\n"), "proxy-mode=iptables (ipvs-proxier") {
		t.Errorf("an ignored --proxy-mode is also named as not used: %q", warnings)
	}
}

// TestPlanKubeconfigBesideConfig: `plan --kubeconfig` names the cluster plan reads, so it
// acts beside --config, over the file's clientConnection.kubeconfig; the daemon's does not.
func TestPlanKubeconfigBesideConfig(t *testing.T) {
	conf := t.TempDir() + "/config.conf"
	if err := os.WriteFile(conf, []byte(confHead+"clientConnection: {kubeconfig: /nonexistent/node.kubeconfig}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := runPlanTo([]string{"--kubeconfig", "/nonexistent/admin.kubeconfig", "--config", conf, "--hostname-override", "n"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "admin.kubeconfig") {
		t.Errorf("plan read %v, want the --kubeconfig given", err)
	}
}

package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// fieldOfFlag is the KubeProxyConfiguration field (config.conf) that sets each daemon
// flag, for docs/configuration.md; a flag absent here has no field. The decoder
// (config.go) is the authority: TestConfigurationDoc checks that each field named here
// is one it honours and that the page is what renderConfigDoc prints.
var fieldOfFlag = map[string]string{
	"hostname-override": "hostnameOverride", "cluster-cidr": "clusterCIDR", "nodeport-addresses": "nodePortAddresses",
	"metrics-bind-address": "metricsBindAddress", "healthz-bind-address": "healthzBindAddress", "bind-address": "bindAddress",
	"scheduler": "ipvs.scheduler", "sync-period": "ipvs.syncPeriod (else iptables.syncPeriod)",
	"min-sync-period": "ipvs.minSyncPeriod (else iptables.minSyncPeriod)", "ipvs-strict-arp": "ipvs.strictARP",
	"ipvs-exclude-cidrs": "ipvs.excludeCIDRs", "ipvs-tcp-timeout": "ipvs.tcpTimeout", "ipvs-tcpfin-timeout": "ipvs.tcpFinTimeout",
	"ipvs-udp-timeout": "ipvs.udpTimeout", "masquerade-all": "iptables.masqueradeAll",
	"iptables-masquerade-bit": "iptables.masqueradeBit", "conntrack-max-per-core": "conntrack.maxPerCore",
	"conntrack-min": "conntrack.min", "conntrack-tcp-timeout-established": "conntrack.tcpEstablishedTimeout",
	"conntrack-tcp-timeout-close-wait": "conntrack.tcpCloseWaitTimeout", "conntrack-tcp-be-liberal": "conntrack.tcpBeLiberal",
	"conntrack-udp-timeout": "conntrack.udpTimeout", "conntrack-udp-timeout-stream": "conntrack.udpStreamTimeout",
	"detect-local-mode": "detectLocalMode", "pod-bridge-interface": "detectLocal.bridgeInterface",
	"pod-interface-name-prefix": "detectLocal.interfaceNamePrefix", "kubeconfig": "clientConnection.kubeconfig",
	"kube-api-qps": "clientConnection.qps", "kube-api-burst": "clientConnection.burst",
	"kube-api-content-type": "clientConnection.contentType", "config-sync-period": "configSyncPeriod",
	"profiling": "enableProfiling", "rules-backend": "rulesBackend", "feature-gates": "featureGates",
}

// renderConfigDoc prints docs/configuration.md from the daemon's flag set.
func renderConfigDoc(fs *pflag.FlagSet) string {
	var b strings.Builder
	b.WriteString(`# Configuration

Generated from the daemon's flag set and its config decoder (` + "`go test ./cmd/ipvs-proxier -run TestConfigurationDoc -update`" + `
rewrites it; the test fails when the code and this page differ). ` + "`ipvs-proxier --help`" + ` prints the same flags.

ipvs-proxier takes kube-proxy's command line and its ` + "`config.conf`" + ` (a ` + "`KubeProxyConfiguration`" + `,
` + "`kubeproxy.config.k8s.io/v1alpha1`" + `, ` + "`mode: ipvs`" + `) as they are: ` + "`--config FILE`" + ` reads the file, and the file
wins, as in kube-proxy: beside it, kube-proxy's flags that set a config field are ignored, and so are ipvs-proxier's other
spellings of them (` + "`--scheduler`" + `, ` + "`--sync-period`" + `, ` + "`--min-sync-period`" + `); they are named in one warning (kube-proxy
is silent), and a field the file leaves out keeps its default. ` + "`plan --kubeconfig`" + ` still names the cluster plan reads. ` + "`--hostname-override`" + ` (over the file's ` + "`hostnameOverride`" + `),
` + "`--master`" + `, ` + "`-v`" + `, ` + "`--cleanup`" + ` and ` + "`--init-only`" + ` still act, as in kube-proxy, and so do ipvs-proxier's own
flags (` + "`--rules-backend`" + ` over the file's ` + "`rulesBackend`" + `). A field the daemon does not use is named in one warning at start;
a value that cannot be used stops the start with the field and the file named. Durations are Go durations
(` + "`30s`" + `, ` + "`15m`" + `).
`)
	groups := map[string][]*pflag.Flag{}
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			groups[flagGroup(f.Name)] = append(groups[flagGroup(f.Name)], f)
		}
	})
	for _, g := range []struct{ key, title, note string }{
		{"kube-proxy", "kube-proxy's flags", "The same names, values and meaning as kube-proxy v1.37's, where it has them."},
		{"own", "ipvs-proxier's own flags", "kube-proxy has none of these; their defaults keep kube-proxy's behaviour where it has one."},
		{"logging", "Logging", ""},
	} {
		fmt.Fprintf(&b, "\n## %s\n", g.title)
		if g.note != "" {
			b.WriteString(g.note + "\n")
		}
		b.WriteString("\n| flag | config.conf field | default | meaning |\n|---|---|---|---|\n")
		for _, f := range groups[g.key] {
			field := "—"
			if v, ok := fieldOfFlag[f.Name]; ok {
				field = "`" + strings.Replace(v, " (else ", "` (else `", 1)
				if strings.Contains(v, "(else ") {
					field = strings.TrimSuffix(field, ")") + "`)"
				} else {
					field += "`"
				}
			}
			def := "—"
			if f.DefValue != "" && f.DefValue != "[]" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
				def = "`" + f.DefValue + "`"
			}
			name := "`--" + f.Name + "`"
			if f.Shorthand != "" {
				name = "`-" + f.Shorthand + "`, " + name
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, field, def, strings.ReplaceAll(f.Usage, "|", "\\|"))
		}
	}
	b.WriteString("\n## Accepted and not used\n" +
		"kube-proxy's flags below parse as kube-proxy's do, so that a reused command line starts; each one given is named\n" +
		"in one warning. The config fields below are accepted quietly: they tune what ipvs-proxier does its own way.\n\n")
	b.WriteString("Flags: " + quoteAll(kubeProxyOnly, "--") + ".\n\n")
	var quiet []string
	mapped := map[string]bool{}
	for _, v := range fieldOfFlag {
		for _, part := range strings.Fields(strings.NewReplacer("(else", "", ")", "").Replace(v)) {
			mapped[part] = true
		}
	}
	for _, f := range configFields {
		if !mapped[f] && !slices.Contains([]string{"apiVersion", "kind", "mode"}, f) {
			quiet = append(quiet, f)
		}
	}
	b.WriteString("Fields: " + quoteAll(quiet, "") + ".\n\n")
	b.WriteString("`mode` should be `ipvs` (or empty): another value is named in the warning, and IPVS is programmed all the same.\n")
	return b.String()
}

func quoteAll(names []string, prefix string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + prefix + n + "`"
	}
	return strings.Join(q, ", ")
}

package main

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kpv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// configFields are the KubeProxyConfiguration fields ipvs-proxier honours. Any other field
// set to a non-zero value is named in one warning.
var configFields = []string{
	"apiVersion", "kind", "mode", "hostnameOverride", "clusterCIDR", "nodePortAddresses", "featureGates",
	"metricsBindAddress", "healthzBindAddress",
	"ipvs.scheduler", "ipvs.syncPeriod", "ipvs.minSyncPeriod", "ipvs.strictARP", "ipvs.excludeCIDRs",
	"ipvs.tcpTimeout", "ipvs.tcpFinTimeout", "ipvs.udpTimeout",
	"iptables.masqueradeAll", "iptables.masqueradeBit",
	"conntrack.maxPerCore", "conntrack.min", "conntrack.tcpEstablishedTimeout", "conntrack.tcpCloseWaitTimeout",
	"conntrack.tcpBeLiberal", "conntrack.udpTimeout", "conntrack.udpStreamTimeout", "detectLocalMode",
	"detectLocal.bridgeInterface", "detectLocal.interfaceNamePrefix",
	"clientConnection.kubeconfig", "clientConnection.qps", "clientConnection.burst", "bindAddress",
	// Accepted and harmless: they tune things ipvs-proxier does its own way.
	"clientConnection.contentType", "clientConnection.acceptContentTypes", "configSyncPeriod",
	"bindAddressHardFail",
	"oomScoreAdj", "enableProfiling", "showHiddenMetricsForVersion", "logging",
	"iptables.syncPeriod", "iptables.minSyncPeriod", "iptables.localhostNodePorts",
	// Ours, beside kube-proxy's (ourFields): kube-proxy decodes a field it does not know
	// leniently, with a warning, so a rollback keeps working.
	"rulesBackend",
}

// ourFields are the config fields ipvs-proxier adds to KubeProxyConfiguration.
type ourFields struct {
	// RulesBackend is --rules-backend.
	RulesBackend string `json:"rulesBackend"`
}

// applyConfigFile reads a kube-proxy config file into o. As in kube-proxy the file wins:
// kube-proxy's flags that set a config field are ignored beside it
// (dropFlagsBesideConfig); --hostname-override and ipvs-proxier's own flags win over
// the file. It returns the warnings to log.
func (o *options) applyConfigFile(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return o.applyConfig(data)
}

func (o *options) applyConfig(data []byte) ([]string, error) {
	c, warnings, err := parseConfig(data)
	if err != nil {
		return nil, err
	}
	warnings = append(o.dropFlagsBesideConfig(), warnings...)
	set := o.fileSetter()
	var ours ourFields
	if err := yaml.Unmarshal(data, &ours); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	o.applyConfigValues(c, ours, set)
	if err := o.applyConfigPeriods(c, set); err != nil {
		return nil, err
	}
	if err := o.applyConfigConntrack(c, set); err != nil {
		return nil, err
	}
	return warnings, nil
}

// parseConfig decodes a KubeProxyConfiguration and names the fields set in it that
// ipvs-proxier does not honour, in one warning.
func parseConfig(data []byte) (*kpv1alpha1.KubeProxyConfiguration, []string, error) {
	var c kpv1alpha1.KubeProxyConfiguration
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	if c.Kind != "" && c.Kind != "KubeProxyConfiguration" || c.APIVersion != "" && c.APIVersion != "kubeproxy.config.k8s.io/v1alpha1" {
		return nil, nil, fmt.Errorf("config: want kind KubeProxyConfiguration, apiVersion kubeproxy.config.k8s.io/v1alpha1; got %s %s", c.Kind, c.APIVersion)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	var warnings, unsupported []string
	walkSet("", raw, func(path string) {
		if !slices.ContainsFunc(configFields, func(f string) bool { return path == f || strings.HasPrefix(path, f+".") }) {
			unsupported = append(unsupported, path)
		}
	})
	if c.Mode != "" && c.Mode != "ipvs" {
		unsupported = append(unsupported, fmt.Sprintf("mode=%s (ipvs-proxier always programs IPVS)", c.Mode))
	}
	if len(unsupported) > 0 {
		sort.Strings(unsupported)
		warnings = append(warnings, "config fields not supported, ignored: "+strings.Join(unsupported, ", "))
	}
	return &c, warnings, nil
}

// setFn applies a value from the config file unless flag (or an alias) was given and
// still acts beside --config (--hostname-override, --rules-backend).
type setFn func(flag string, apply func())

// fileSetter is o's setFn; it records which config field each value came from.
func (o *options) fileSetter() setFn {
	if o.fromFile == nil {
		o.fromFile = map[string]string{}
	}
	return func(flag string, apply func()) {
		for _, f := range append([]string{flag}, aliases[flag]...) {
			if o.fs.Changed(f) {
				return
			}
		}
		apply()
		if field, ok := flagFields[flag]; ok {
			o.fromFile[flag] = field
		}
	}
}

// applyConfigValues takes the plain values: strings, lists, booleans, the masquerade bit
// and the client's rate limits.
func (o *options) applyConfigValues(c *kpv1alpha1.KubeProxyConfiguration, ours ourFields, set setFn) {
	str := func(flag, v string, dst *string) {
		if v != "" {
			set(flag, func() { *dst = v })
		}
	}
	str("hostname-override", c.HostnameOverride, &o.hostnameOverride)
	str("cluster-cidr", c.ClusterCIDR, &o.clusterCIDR)
	str("detect-local-mode", string(c.DetectLocalMode), &o.detectLocalMode)
	str("pod-bridge-interface", c.DetectLocal.BridgeInterface, &o.podBridge)
	str("pod-interface-name-prefix", c.DetectLocal.InterfaceNamePrefix, &o.podIfPrefix)
	str("metrics-bind-address", c.MetricsBindAddress, &o.metricsAddr)
	str("healthz-bind-address", c.HealthzBindAddress, &o.healthzAddr)
	str("bind-address", c.BindAddress, &o.bindAddress)
	str("scheduler", c.IPVS.Scheduler, &o.scheduler)
	str("rules-backend", ours.RulesBackend, &o.rulesBackend)
	str("kubeconfig", c.ClientConnection.Kubeconfig, &o.kubeconfig)
	str("kube-api-content-type", c.ClientConnection.ContentType, &o.apiContentType)
	if c.ClientConnection.AcceptContentTypes != "" {
		o.apiAccept = c.ClientConnection.AcceptContentTypes
	}
	if len(c.FeatureGates) > 0 {
		set("feature-gates", func() { o.kp.featureGates = c.FeatureGates })
	}
	if len(c.NodePortAddresses) > 0 {
		set("nodeport-addresses", func() { o.nodePortAddresses = c.NodePortAddresses })
	}
	if len(c.IPVS.ExcludeCIDRs) > 0 {
		set("ipvs-exclude-cidrs", func() { o.excludeCIDRs = c.IPVS.ExcludeCIDRs })
	}
	if c.IPVS.StrictARP {
		set("ipvs-strict-arp", func() { o.strictARP = true })
	}
	if c.EnableProfiling {
		set("profiling", func() { o.profiling = true })
	}
	if c.IPTables.MasqueradeAll {
		set("masquerade-all", func() { o.masqueradeAll = true })
	}
	if bit := c.IPTables.MasqueradeBit; bit != nil {
		set("iptables-masquerade-bit", func() { o.masqueradeBit = int(*bit) })
	}
	if c.ClientConnection.QPS > 0 {
		set("kube-api-qps", func() { o.apiQPS = c.ClientConnection.QPS })
	}
	if c.ClientConnection.Burst > 0 {
		set("kube-api-burst", func() { o.apiBurst = int(c.ClientConnection.Burst) })
	}
}

// applyConfigPeriods takes the sync periods and IPVS timeouts. ipvs.* periods are the
// IPVS mode's own; kube-proxy falls back to the iptables ones.
func (o *options) applyConfigPeriods(c *kpv1alpha1.KubeProxyConfiguration, set setFn) error {
	// kube-proxy's validation rejects negative periods and timeouts
	// (pkg/proxy/apis/config/validation); so do we, rather than take the default.
	for _, d := range []struct {
		flag   string
		fields []string
		vals   []int64
		dst    *int64
	}{
		{"sync-period", []string{"ipvs.syncPeriod", "iptables.syncPeriod"}, []int64{int64(c.IPVS.SyncPeriod.Duration), int64(c.IPTables.SyncPeriod.Duration)}, (*int64)(&o.syncPeriod)},
		{"min-sync-period", []string{"ipvs.minSyncPeriod", "iptables.minSyncPeriod"}, []int64{int64(c.IPVS.MinSyncPeriod.Duration), int64(c.IPTables.MinSyncPeriod.Duration)}, (*int64)(&o.minSyncPeriod)},
		{"ipvs-tcp-timeout", []string{"ipvs.tcpTimeout"}, []int64{int64(c.IPVS.TCPTimeout.Duration)}, (*int64)(&o.tcpTimeout)},
		{"ipvs-tcpfin-timeout", []string{"ipvs.tcpFinTimeout"}, []int64{int64(c.IPVS.TCPFinTimeout.Duration)}, (*int64)(&o.tcpFinTimeout)},
		{"ipvs-udp-timeout", []string{"ipvs.udpTimeout"}, []int64{int64(c.IPVS.UDPTimeout.Duration)}, (*int64)(&o.udpTimeout)},
		{"config-sync-period", []string{"configSyncPeriod"}, []int64{int64(c.ConfigSyncPeriod.Duration)}, (*int64)(&o.configSyncPeriod)},
	} {
		for i, v := range d.vals {
			if v < 0 {
				return fmt.Errorf("config: %s %v: must not be negative", d.fields[i], time.Duration(v))
			}
		}
		for i, v := range d.vals {
			if v > 0 {
				set(d.flag, func() { *d.dst = v; o.fromFile[d.flag] = d.fields[i] })
				break
			}
		}
	}
	return nil
}

// applyConfigConntrack takes the conntrack sizing and timeouts.
func (o *options) applyConfigConntrack(c *kpv1alpha1.KubeProxyConfiguration, set setFn) error {
	for field, v := range map[string]*int32{"conntrack.maxPerCore": c.Conntrack.MaxPerCore, "conntrack.min": c.Conntrack.Min} {
		if v != nil && *v < 0 {
			return fmt.Errorf("config: %s %d: must not be negative", field, *v)
		}
	}
	// kube-proxy's conntrack timeouts: an explicit 0 leaves the kernel's value, an absent
	// one keeps kube-proxy's default (the flags' defaults).
	ct := c.Conntrack
	for _, d := range []struct {
		flag, field string
		v           *metav1.Duration
		dst         *time.Duration
	}{
		{"conntrack-tcp-timeout-established", "conntrack.tcpEstablishedTimeout", ct.TCPEstablishedTimeout, &o.conntrack.TCPEstablished},
		{"conntrack-tcp-timeout-close-wait", "conntrack.tcpCloseWaitTimeout", ct.TCPCloseWaitTimeout, &o.conntrack.TCPCloseWait},
		{"conntrack-udp-timeout", "conntrack.udpTimeout", &ct.UDPTimeout, &o.conntrack.UDP},
		{"conntrack-udp-timeout-stream", "conntrack.udpStreamTimeout", &ct.UDPStreamTimeout, &o.conntrack.UDPStream},
	} {
		if d.v == nil {
			continue
		}
		if d.v.Duration < 0 {
			return fmt.Errorf("config: %s %v: must not be negative", d.field, d.v.Duration)
		}
		set(d.flag, func() { *d.dst = d.v.Duration })
	}
	if ct.TCPBeLiberal {
		set("conntrack-tcp-be-liberal", func() { o.conntrack.TCPBeLiberal = true })
	}
	if v := c.Conntrack.MaxPerCore; v != nil {
		set("conntrack-max-per-core", func() { o.conntrackPerCore = *v })
	}
	if v := c.Conntrack.Min; v != nil {
		set("conntrack-min", func() { o.conntrackMin = *v })
	}
	return nil
}

// flagFields names the config field behind a flag, for messages about a value that came
// from the file.
var flagFields = map[string]string{
	"kubeconfig": "clientConnection.kubeconfig", "cluster-cidr": "clusterCIDR", "nodeport-addresses": "nodePortAddresses",
	"ipvs-exclude-cidrs": "ipvs.excludeCIDRs", "scheduler": "ipvs.scheduler", "hostname-override": "hostnameOverride",
	"metrics-bind-address": "metricsBindAddress", "healthz-bind-address": "healthzBindAddress", "bind-address": "bindAddress",
	"iptables-masquerade-bit": "iptables.masqueradeBit", "detect-local-mode": "detectLocalMode",
	"pod-bridge-interface": "detectLocal.bridgeInterface", "pod-interface-name-prefix": "detectLocal.interfaceNamePrefix",
	"rules-backend": "rulesBackend", "feature-gates": "featureGates",
}

// aliases lists the other spellings of a flag.
var aliases = map[string][]string{
	"scheduler":       {"ipvs-scheduler"},
	"sync-period":     {"ipvs-sync-period"},
	"min-sync-period": {"ipvs-min-sync-period"},
}

// walkSet calls fn with the dotted path of every leaf in m holding a non-zero value.
func walkSet(prefix string, v any, fn func(string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			walkSet(p, val, fn)
		}
	case []any:
		if len(x) > 0 {
			fn(prefix)
		}
	case nil:
	case string:
		if x != "" && x != "0s" && x != "0" {
			fn(prefix)
		}
	case bool:
		if x {
			fn(prefix)
		}
	case float64:
		if x != 0 {
			fn(prefix)
		}
	default:
		fn(prefix)
	}
}

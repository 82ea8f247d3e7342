package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// kubeProxyOnly are kube-proxy v1.37's flags (`kube-proxy --help`, plus the hidden,
// deprecated --healthz-port and --metrics-port) that ipvs-proxier has no use for. They
// are accepted, so that a reused kube-proxy command line never crash-loops on "unknown
// flag", and any that is given is named in one warning.
var kubeProxyOnly = []string{
	"bind-address-hard-fail", "healthz-port", "iptables-localhost-nodeports",
	"iptables-min-sync-period", "iptables-sync-period", "log-flush-frequency",
	"log-json-info-buffer-size", "log-json-split-stream", "log-text-info-buffer-size", "log-text-split-stream",
	"logging-format", "metrics-port",
	"show-hidden-metrics-for-version", "vmodule", "write-config-to",
}

// kubeProxyOnlyBools are the booleans among kubeProxyOnly.
var kubeProxyOnlyBools = []string{"bind-address-hard-fail", "iptables-localhost-nodeports",
	"log-json-split-stream", "log-text-split-stream"}

// kubeProxyFlags are the kube-proxy flags that act here beyond their ipvs-proxier
// namesakes.
type kubeProxyFlags struct {
	verbosity   int
	cleanup     bool
	initOnly    bool
	proxyMode   string
	oomScoreAdj int
	version     bool
	// featureGates are --feature-gates (or config.conf's featureGates): featuregates.go.
	featureGates map[string]bool
	ignored      map[string]*string
}

// addKubeProxyFlags registers kube-proxy's flags on fs.
func (o *options) addKubeProxyFlags() {
	fs, k := o.fs, &o.kp
	fs.IntVarP(&k.verbosity, "v", "v", 0, "kube-proxy's log verbosity: 4 and above is --log-level=debug (unless --log-level is given)")
	fs.BoolVar(&k.cleanup, "cleanup", false, "kube-proxy's --cleanup: run 'ipvs-proxier cleanup --iptables-mode-leftovers' and exit")
	fs.BoolVar(&k.initOnly, "init-only", false, "kube-proxy's --init-only: load the kernel modules, set the sysctls, and exit")
	fs.StringVar(&k.proxyMode, "proxy-mode", "", "kube-proxy's proxy mode; ipvs-proxier always programs IPVS (another value is named in a warning)")
	fs.IntVar(&k.oomScoreAdj, "oom-score-adj", 0, "kube-proxy's --oom-score-adj: written to /proc/self/oom_score_adj when given")
	fs.BoolVar(&k.version, "version", false, "print the version and exit")
	fs.Var(gatesValue{&k.featureGates}, "feature-gates", "kube-proxy's feature gates, key=bool,...: AllowServiceExternalIPs=false programs no externalIPs; "+
		"KubeProxyIPVS=false is refused; another gate kube-proxy v1.37 knows is accepted and named in a warning; an unknown one is an error")
	k.ignored = map[string]*string{}
	for _, name := range kubeProxyOnly {
		v := new(string)
		k.ignored[name] = v
		fs.Var(anyValue{v}, name, "kube-proxy flag accepted for drop-in use; not used by ipvs-proxier")
		// kube-proxy's booleans must still parse when given without a value.
		if slices.Contains(kubeProxyOnlyBools, name) {
			fs.Lookup(name).NoOptDefVal = "true"
		}
		_ = fs.MarkHidden(name)
	}
}

// anyValue takes whatever value a kube-proxy-only flag is given.
type anyValue struct{ p *string }

func (a anyValue) String() string     { return *a.p }
func (a anyValue) Set(s string) error { *a.p = s; return nil }
func (a anyValue) Type() string       { return "string" }

// kubeProxyWarnings applies -v and returns one warning naming the kube-proxy flags given
// that do nothing here, and a --proxy-mode other than ipvs.
func (o *options) kubeProxyWarnings() []string {
	if o.fs.Changed("v") && !o.fs.Changed("log-level") {
		o.logLevel = "info"
		if o.kp.verbosity >= 4 {
			o.logLevel = "debug"
		}
	}
	var names []string
	o.fs.Visit(func(f *pflag.Flag) {
		if _, ok := o.kp.ignored[f.Name]; ok && f.Changed {
			names = append(names, "--"+f.Name+"="+f.Value.String())
		}
	})
	if m := o.kp.proxyMode; m != "" && m != "ipvs" {
		names = append(names, "--proxy-mode="+m+" (ipvs-proxier always programs IPVS)")
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return []string{"kube-proxy flags accepted but not used by ipvs-proxier: " + strings.Join(slices.Compact(names), ", ")}
}

// validOOMScoreAdj checks --oom-score-adj as kube-proxy does.
func (o *options) validOOMScoreAdj() error {
	if v := o.kp.oomScoreAdj; o.fs.Changed("oom-score-adj") && (v < -1000 || v > 1000) {
		return fmt.Errorf("--oom-score-adj %d not in [-1000, 1000]", v)
	}
	return nil
}

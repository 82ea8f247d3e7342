package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// overview opens `ipvs-proxier help` and every --help: what the program is and its
// commands, one line each.
const overview = `ipvs-proxier: a node-level Kubernetes service proxy that programs Linux IPVS, in place of
kube-proxy's IPVS mode (its flags, config.conf, metrics and kernel object names).

Usage:
  ipvs-proxier [run] [flags]     run the daemon (the default command)
  ipvs-proxier plan [flags]      print what the daemon would program for some objects, touching nothing
  ipvs-proxier status [flags]    summarise the local daemon's /status
  ipvs-proxier cleanup [flags]   remove what ipvs-proxier programmed on this node
  ipvs-proxier version           print the version
  ipvs-proxier help [COMMAND]    this text, or a command's flags
`

// kubeProxyFlagNames are kube-proxy v1.37's flags (`kube-proxy --help`, and the hidden
// --healthz-port and --metrics-port), which the daemon accepts as kube-proxy takes them;
// TestKubeProxyFlagNames keeps the list equal to testdata/kube-proxy-v1.37-flags.txt.
var kubeProxyFlagNames = []string{
	"bind-address", "bind-address-hard-fail", "cleanup", "cluster-cidr", "config", "config-sync-period",
	"conntrack-max-per-core", "conntrack-min", "conntrack-tcp-be-liberal", "conntrack-tcp-timeout-close-wait",
	"conntrack-tcp-timeout-established", "conntrack-udp-timeout", "conntrack-udp-timeout-stream", "detect-local-mode",
	"feature-gates", "healthz-bind-address", "hostname-override", "init-only", "iptables-localhost-nodeports",
	"iptables-masquerade-bit", "iptables-min-sync-period", "iptables-sync-period", "ipvs-exclude-cidrs",
	"ipvs-min-sync-period", "ipvs-scheduler", "ipvs-strict-arp", "ipvs-sync-period", "ipvs-tcp-timeout",
	"ipvs-tcpfin-timeout", "ipvs-udp-timeout", "kube-api-burst", "kube-api-content-type", "kube-api-qps", "kubeconfig",
	"log-flush-frequency", "log-json-info-buffer-size", "log-json-split-stream", "log-text-info-buffer-size",
	"log-text-split-stream", "logging-format", "masquerade-all", "master", "metrics-bind-address", "nodeport-addresses",
	"oom-score-adj", "pod-bridge-interface", "pod-interface-name-prefix", "profiling", "proxy-mode",
	"show-hidden-metrics-for-version", "v", "version", "vmodule", "write-config-to", "healthz-port", "metrics-port",
}

// loggingFlags are the flags of the log's level and format.
var loggingFlags = []string{"log-level", "log-format", "v"}

// flagGroup is the --help section a daemon flag is listed in.
func flagGroup(name string) string {
	switch {
	case slices.Contains(loggingFlags, name):
		return "logging"
	case slices.Contains(kubeProxyFlagNames, name):
		return "kube-proxy"
	}
	return "own"
}

// daemonUsage prints the overview and the daemon's flags in three groups: kube-proxy's
// (the same names, values and meaning), ipvs-proxier's own, and logging. Hidden flags
// (kube-proxy's that do nothing here) are left out.
func daemonUsage(w io.Writer, fs *pflag.FlagSet) {
	groups := map[string]*pflag.FlagSet{}
	for _, g := range []string{"kube-proxy", "own", "logging"} {
		groups[g] = pflag.NewFlagSet(g, pflag.ContinueOnError)
	}
	fs.VisitAll(func(f *pflag.Flag) { groups[flagGroup(f.Name)].AddFlag(f) })
	fmt.Fprint(w, overview)
	for _, g := range []struct{ name, title string }{
		{"kube-proxy", "kube-proxy's flags (as kube-proxy takes them; its flags with no use here are accepted and named in a warning)"},
		{"own", "ipvs-proxier's own flags"},
		{"logging", "Logging"},
	} {
		fmt.Fprintf(w, "\n%s:\n%s", g.title, groups[g.name].FlagUsages())
	}
}

// commandUsage prints a command's usage line, what it does, an example, and its flags.
func commandUsage(w io.Writer, fs *pflag.FlagSet, line, about, example string) {
	fmt.Fprintf(w, "Usage:\n  %s\n\n%s\n", line, about)
	if example != "" {
		fmt.Fprintf(w, "\nExample:\n%s\n", example)
	}
	fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
}

// runHelp is `ipvs-proxier help [COMMAND]`.
func runHelp(args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(out, overview)
		fmt.Fprintln(out, "\n`ipvs-proxier --help` lists the daemon's flags; `ipvs-proxier COMMAND --help` a command's.")
		return nil
	}
	if len(args) > 1 || !slices.Contains(subcommands, args[0]) || args[0] == "help" {
		return fmt.Errorf("%w: help takes one of %s", errUsage, strings.Join(subcommands, ", "))
	}
	switch args[0] {
	case "version":
		fmt.Fprintln(out, "Usage:\n  ipvs-proxier version\n\nPrints the version.")
		return nil
	case "run":
		o := newOptions("ipvs-proxier")
		daemonUsage(out, o.fs)
		return nil
	}
	return helpOf(args[0], out)
}

// helpOf prints a command's --help to out.
func helpOf(cmd string, out io.Writer) error {
	var err error
	switch cmd {
	case "plan":
		err = runPlanTo([]string{"--help"}, out, out)
	case "status":
		err = runStatus([]string{"--help"}, out)
	case "cleanup":
		err = runCleanup([]string{"--help"}, out)
	}
	if err == pflag.ErrHelp {
		return nil
	}
	return err
}

package main

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// flagsBesideConfig are kube-proxy's flags that still act when --config is given: the
// ones cmd/kube-proxy/app/options.go keeps outside the config it replaces with the
// file's (--master, --cleanup, --init-only, --write-config-to, --version), --hostname-override
// (processHostnameOverrideFlag: it wins over the file's hostnameOverride) and the
// logging flags (copyLogsFromFlags).
var flagsBesideConfig = []string{
	"config", "write-config-to", "cleanup", "init-only", "version", "master", "hostname-override",
	"v", "vmodule", "logging-format", "log-flush-frequency", "log-json-info-buffer-size",
	"log-json-split-stream", "log-text-info-buffer-size", "log-text-split-stream",
}

// fileGoverned reports whether --config replaces flag: a kube-proxy flag that sets a
// config field, or ipvs-proxier's other spelling of one (--scheduler, --sync-period,
// --min-sync-period). ipvs-proxier's own flags are not: kube-proxy has no such flag to
// follow, and a field of ours (rulesBackend) is overridden by its flag.
func fileGoverned(flag string) bool {
	if _, alias := aliases[flag]; alias {
		return true
	}
	return slices.Contains(kubeProxyFlagNames, flag) && !slices.Contains(flagsBesideConfig, flag)
}

// dropFlagsBesideConfig puts every file-governed flag given back to its default, so the
// file (or kube-proxy's default where the file is silent) wins, and returns one warning
// naming them. kube-proxy ignores them without a word; the warning is ours.
func (o *options) dropFlagsBesideConfig() []string {
	var dropped []string
	o.fs.Visit(func(f *pflag.Flag) {
		if !f.Changed || !fileGoverned(f.Name) || slices.Contains(o.planFlags, f.Name) {
			return
		}
		dropped = append(dropped, "--"+f.Name+"="+f.Value.String())
		switch v := f.Value.(type) {
		case interface{ reset() }:
			v.reset()
		case pflag.SliceValue:
			_ = v.Replace(nil) // every list flag's default is empty
		default:
			_ = f.Value.Set(f.DefValue)
		}
		f.Changed = false
	})
	if len(dropped) == 0 {
		return nil
	}
	slices.Sort(dropped)
	return []string{"flags ignored beside --config (the file wins, as in kube-proxy): " + strings.Join(dropped, ", ")}
}

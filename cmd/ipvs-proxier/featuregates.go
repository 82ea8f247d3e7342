package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// gateSpec is a feature gate's state at kube-proxy's version: its default, whether it is
// locked to it, and whether it does not exist yet at that version (PreAlpha).
type gateSpec struct {
	Default, Locked, PreAlpha bool
}

// followedGates are the gates kube-proxy v1.37 reads that decide what a node programs in
// IPVS mode, and which ipvs-proxier follows:
//   - AllowServiceExternalIPs: off, no Service's externalIPs are programmed or bound
//     (pkg/proxy/serviceport.go, ExternalIPs).
//   - KubeProxyIPVS: off, kube-proxy's validation refuses proxy mode ipvs
//     (pkg/proxy/apis/config/validation, validateProxyModeLinux); ipvs-proxier, which
//     programs IPVS only, refuses to start.
//   - PreferSameTrafficDistribution (PreferSameNode hints) and MultiCIDRServiceAllocator
//     (ServiceCIDR objects): locked on in v1.37, and always followed.
//
// The others kube-proxy reads do not change what IPVS mode programs:
// KubeProxyNFTablesLocalhostNodePorts and NFTablesNetlink are the nftables mode's,
// ComponentFlagz and ComponentStatusz its debug pages, client-go's and the logging gates
// its client and log. They are accepted and named in one warning, as every other known
// gate is.
var followedGates = []string{"AllowServiceExternalIPs", "KubeProxyIPVS", "PreferSameTrafficDistribution", "MultiCIDRServiceAllocator"}

// featureGates resolves the gates given (--feature-gates, or config.conf's featureGates)
// as kube-proxy's gate set takes them (k8s.io/component-base/featuregate, SetFromMap):
// an unknown name, a locked gate set away from its value or a gate that does not exist
// yet at v1.37 is an error. It returns whether externalIPs are off and the warning
// naming the gates that have no effect here.
func (o *options) featureGates() (ignoreExternalIPs bool, warnings []string, err error) {
	gates := o.kp.featureGates
	var unused []string
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		v := gates[name]
		spec, ok := knownFeatureGates[name]
		switch {
		case !ok:
			return false, nil, fmt.Errorf("%s: unrecognized feature gate: %s", o.origin("feature-gates"), name)
		case spec.Locked && v != spec.Default:
			return false, nil, fmt.Errorf("%s: cannot set feature gate %s to %v, feature is locked to %v", o.origin("feature-gates"), name, v, spec.Default)
		case spec.PreAlpha:
			return false, nil, fmt.Errorf("%s: cannot set feature gate %s to %v, feature is PreAlpha at emulated version 1.37", o.origin("feature-gates"), name, v)
		case name == "KubeProxyIPVS" && !v:
			return false, nil, fmt.Errorf("%s: KubeProxyIPVS=false: kube-proxy v1.37 refuses proxy mode ipvs with it, and ipvs-proxier programs IPVS only", o.origin("feature-gates"))
		case name == "AllowServiceExternalIPs":
			ignoreExternalIPs = !v
		case !slices.Contains(followedGates, name):
			unused = append(unused, name+"="+strconv.FormatBool(v))
		}
	}
	if len(unused) > 0 {
		warnings = []string{o.origin("feature-gates") + ": feature gates with no effect on what ipvs-proxier programs, accepted: " + strings.Join(unused, ", ")}
	}
	return ignoreExternalIPs, warnings, nil
}

// gatesValue is --feature-gates: kube-proxy's key=bool list (k8s.io/component-base/cli/flag,
// MapStringBool), added up over repeated flags.
type gatesValue struct{ m *map[string]bool }

func (g gatesValue) Set(value string) error {
	if *g.m == nil {
		*g.m = map[string]bool{}
	}
	for _, s := range strings.Split(value, ",") {
		if s == "" {
			continue
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("malformed pair, expect string=bool")
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("invalid value of %s: %s, err: %v", k, v, err)
		}
		(*g.m)[k] = b
	}
	return nil
}

func (g gatesValue) String() string {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(*g.m)) {
		pairs = append(pairs, k+"="+strconv.FormatBool((*g.m)[k]))
	}
	return strings.Join(pairs, ",")
}

func (g gatesValue) Type() string { return "mapStringBool" }

// reset empties the list (dropFlagsBesideConfig).
func (g gatesValue) reset() { *g.m = nil }

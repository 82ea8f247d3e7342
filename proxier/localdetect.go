package proxier

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// LocalMode is kube-proxy's detectLocalMode: how traffic from this cluster's pods is
// told apart from traffic from outside (pkg/proxy/util/localdetector.go). One detector
// decides both the masquerade rule of ClusterIPs and the in-cluster exemption of the
// ETP=Local no-local-endpoint drop, so the two never disagree.
type LocalMode string

// The detectLocalMode values kube-proxy v1.37 accepts.
const (
	LocalModeClusterCIDR         LocalMode = "ClusterCIDR"
	LocalModeNodeCIDR            LocalMode = "NodeCIDR"
	LocalModeBridgeInterface     LocalMode = "BridgeInterface"
	LocalModeInterfaceNamePrefix LocalMode = "InterfaceNamePrefix"
)

// LocalModes lists them, for messages.
var LocalModes = []LocalMode{LocalModeClusterCIDR, LocalModeNodeCIDR, LocalModeBridgeInterface, LocalModeInterfaceNamePrefix}

// ValidateLocalDetect checks the mode and its interface setting as kube-proxy's
// validation does (empty mode means ClusterCIDR; the interface modes need a name).
func ValidateLocalDetect(mode LocalMode, bridge, prefix string) error {
	switch mode {
	case "", LocalModeClusterCIDR, LocalModeNodeCIDR:
		return nil
	case LocalModeBridgeInterface:
		return validIfName("bridgeInterface", bridge, false)
	case LocalModeInterfaceNamePrefix:
		return validIfName("interfaceNamePrefix", prefix, true)
	}
	modes := make([]string, len(LocalModes))
	for i, m := range LocalModes {
		modes[i] = string(m)
	}
	return fmt.Errorf("detectLocalMode %q: want one of %s", mode, strings.Join(modes, ", "))
}

// validIfName checks an interface name (or prefix) as the kernel's dev_valid_name does:
// 1-15 bytes, no '/', ':' or whitespace, not "." or "..". It also keeps iptables'
// wildcard '+' and '!' out, since the name goes into a rule.
func validIfName(field, name string, prefix bool) error {
	if name == "" {
		return fmt.Errorf("detectLocal.%s: must be set for this detectLocalMode", field)
	}
	if len(name) > 15 || name == "." || name == ".." || strings.ContainsAny(name, "/: \t\n+!\"'") {
		return fmt.Errorf("detectLocal.%s %q: not an interface name", field, name)
	}
	return nil
}

// localMatch returns the match selecting traffic from this cluster's pods of family f,
// or false when the detector cannot tell (no CIDR of that family): then, as with
// kube-proxy's no-op detector, nothing counts as pod traffic.
func (c *Config) localMatch(f kernel.Family) (kernel.Match, bool) {
	switch c.LocalMode {
	case LocalModeNodeCIDR:
		if p := firstOfFamily(c.NodePodCIDRs, f); p.IsValid() {
			return kernel.IP{Src: true, Net: p}, true
		}
		return nil, false
	case LocalModeBridgeInterface:
		return kernel.Iface{Name: c.BridgeInterface}, true
	case LocalModeInterfaceNamePrefix:
		return kernel.Iface{Name: c.InterfaceNamePrefix, Prefix: true}, true
	}
	if p := firstOfFamily(c.ClusterCIDRs, f); p.IsValid() {
		return kernel.IP{Src: true, Net: p}, true
	}
	return nil, false
}

// firstOfFamily returns the first prefix of family f: kube-proxy's CIDR detectors take
// one CIDR per family.
func firstOfFamily(ps []netip.Prefix, f kernel.Family) netip.Prefix {
	if i := slices.IndexFunc(ps, func(p netip.Prefix) bool { return kernel.FamilyOf(p.Addr()) == f }); i >= 0 {
		return ps[i]
	}
	return netip.Prefix{}
}

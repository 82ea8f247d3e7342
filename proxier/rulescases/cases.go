// Package rulescases holds the configurations the rules tests run over: every setting
// that changes the fixed rules (masqueradeAll, each detectLocalMode with and without a
// CIDR of the family, the masquerade bit, service CIDRs, out filters of each family and
// protocol), for both backends.
package rulescases

import (
	"fmt"
	"net/netip"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Case is one configuration and the out filters its Services make.
type Case struct {
	Name       string
	Config     proxier.Config
	OutFilters []proxier.OutFilter
}

// Families are both families, for ranging over.
var Families = []kernel.Family{kernel.IPv4, kernel.IPv6}

// Cases returns the configurations for backend b.
func Cases(b *proxier.RulesBackend) []Case {
	pfx := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return out
	}
	vs := func(p kernel.Protocol, a string, port uint16) proxier.OutFilter {
		return proxier.OutFilter{VSKey: kernel.VSKey{Protocol: p, Address: netip.MustParseAddr(a), Port: port}}
	}
	outFilters := []proxier.OutFilter{vs(kernel.TCP, "5.6.7.8", 80), vs(kernel.UDP, "5.6.7.9", 53),
		vs(kernel.SCTP, "fd00::8", 9), vs(kernel.TCP, "fd00::9", 443)}
	bit0, bit14, bit31 := 0, 14, 31
	base := func() proxier.Config {
		return proxier.Config{RulesBackend: b, MasqueradeBit: &bit14,
			ClusterCIDRs:    pfx("10.244.0.0/16", "fd00:10:244::/56"),
			ServiceCIDRs:    pfx("10.96.0.0/12", "fd00:10:96::/112"),
			NodePodCIDRs:    pfx("10.244.1.0/24", "fd00:10:244:1::/64"),
			BridgeInterface: "cni0", InterfaceNamePrefix: "veth",
			NodePortAddresses: pfx("192.168.1.0/24")}
	}
	var out []Case
	add := func(name string, mut func(*proxier.Config), of []proxier.OutFilter) {
		c := base()
		mut(&c)
		out = append(out, Case{Name: fmt.Sprintf("%s/%s", b, name), Config: c, OutFilters: of})
	}
	for _, mode := range append([]proxier.LocalMode{""}, proxier.LocalModes...) {
		add("mode="+string(mode), func(c *proxier.Config) { c.LocalMode = mode }, nil)
		add("mode="+string(mode)+",masqueradeAll,outFilters", func(c *proxier.Config) {
			c.LocalMode, c.MasqueradeAll = mode, true
		}, outFilters)
	}
	add("no cluster CIDR", func(c *proxier.Config) { c.ClusterCIDRs = nil }, outFilters)
	add("IPv4 cluster CIDR only, NodeCIDR of IPv6 only", func(c *proxier.Config) {
		c.ClusterCIDRs, c.NodePodCIDRs = pfx("10.244.0.0/16"), pfx("fd00:10:244:1::/64")
	}, nil)
	add("NodeCIDR without pod CIDRs", func(c *proxier.Config) { c.LocalMode, c.NodePodCIDRs = proxier.LocalModeNodeCIDR, nil }, nil)
	add("no service CIDRs", func(c *proxier.Config) { c.ServiceCIDRs = nil }, nil)
	add("two service CIDRs a family", func(c *proxier.Config) {
		c.ServiceCIDRs = pfx("10.96.0.0/12", "10.100.0.0/16", "fd00:10:96::/112", "fd00:10:97::/112")
	}, outFilters[:1])
	add("masquerade bit 0", func(c *proxier.Config) { c.MasqueradeBit = &bit0 }, nil)
	add("masquerade bit 31", func(c *proxier.Config) { c.MasqueradeBit = &bit31 }, nil)
	add("no nodePortAddresses", func(c *proxier.Config) { c.NodePortAddresses = nil }, nil)
	return out
}

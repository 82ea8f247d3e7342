// Package proxier translates Kubernetes Services and EndpointSlices into the kernel state
// a node needs: IPVS virtual and real servers, addresses on the dummy interface, ipset
// members and iptables rules. It is pure: objects in, a plain value out. It never touches
// the kernel.
package proxier

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Defaults shared with kube-proxy, so an operator's habits carry over.
const (
	// DefaultDummyDevice is the interface that holds every VIP.
	DefaultDummyDevice = "kube-ipvs0"
	// DefaultScheduler is kube-proxy's default IPVS scheduler.
	DefaultScheduler = "rr"
	// DefaultMasqueradeBit is the fwmark bit KUBE-MARK-MASQ sets (0x4000).
	DefaultMasqueradeBit = 14
	// DefaultAffinityTimeout is the API default of sessionAffinityConfig.clientIP.timeoutSeconds.
	DefaultAffinityTimeout = 10800
	// DefaultMaxEndpoints caps the real servers of one virtual server. IPVS has no hard
	// limit, but a runaway slice set should not stall the sync of every other service.
	DefaultMaxEndpoints = 10000
)

// Annotations that tune one Service.
const (
	// AnnotationScheduler overrides --scheduler for one Service.
	AnnotationScheduler = "ipvs-proxier.io/scheduler"
	// AnnotationSchedulerFlags sets sh/mh flags: sh-fallback, sh-port, mh-fallback, mh-port.
	AnnotationSchedulerFlags = "ipvs-proxier.io/scheduler-flags"
)

// Schedulers lists every IPVS scheduler the Linux kernel ships (net/netfilter/ipvs).
var Schedulers = kernel.InTreeSchedulers

// ValidateScheduler reports whether name is a kernel IPVS scheduler.
func ValidateScheduler(name string) error {
	if !slices.Contains(Schedulers, name) {
		return fmt.Errorf("unknown IPVS scheduler %q (valid: %v)", name, Schedulers)
	}
	return nil
}

// Config is everything besides the API objects that decides the desired state.
type Config struct {
	// NodeName is this node's name; endpoints with this nodeName are local.
	NodeName string
	// Zone is this node's topology.kubernetes.io/zone label, for topology hints.
	Zone string
	// NodeIPs are the node's addresses that NodePorts may listen on (before
	// NodePortAddresses filtering). They are never bound to the dummy interface.
	NodeIPs []netip.Addr
	// PrimaryIPs are the Node object's own addresses (its first InternalIP, else
	// ExternalIP, per family): kube-proxy's "node IP", which decides whether the node
	// itself is inside a LoadBalancer's source ranges. Empty means NodeIPs.
	PrimaryIPs []netip.Addr
	// NodePortAddresses restricts NodePorts to node IPs in these prefixes, per family: a
	// family with no prefix here listens on all its node IPs (NodePortAllowed).
	NodePortAddresses []netip.Prefix
	// Families are the IP families this node serves.
	Families []kernel.Family
	// Scheduler is the default scheduler; it must pass ValidateScheduler.
	Scheduler string
	// MasqueradeAll SNATs all ClusterIP traffic.
	MasqueradeAll bool
	// ClusterCIDRs are the pod ranges: with LocalMode ClusterCIDR (the default), traffic
	// from the first of each family counts as in-cluster.
	ClusterCIDRs []netip.Prefix
	// LocalMode is kube-proxy's detectLocalMode (localdetect.go); empty is ClusterCIDR.
	LocalMode LocalMode
	// BridgeInterface and InterfaceNamePrefix are detectLocal's settings for the
	// BridgeInterface and InterfaceNamePrefix modes.
	BridgeInterface, InterfaceNamePrefix string
	// ServiceCIDRs are the ranges ClusterIPs are allocated from (the cluster's
	// ServiceCIDR objects, else --service-cluster-ip-range): new connections to an
	// address in them that no Service holds are rejected. Empty: no such check.
	ServiceCIDRs []netip.Prefix
	// NodePodCIDRs are the Node's spec.podCIDRs, for LocalMode NodeCIDR (filled from the
	// Node by the syncer, and followed when it changes).
	NodePodCIDRs []netip.Prefix
	// ServiceProxyName: Services labelled service.kubernetes.io/service-proxy-name are
	// served only if the label equals this.
	ServiceProxyName string
	// DummyDevice is the interface VIPs are bound to.
	DummyDevice string
	// VIPLocalRoutes holds the Service IPs as local routes through lo instead of
	// addresses on DummyDevice (--vip-local-routes; kernel/linux viproutes.go). The
	// translation does not read it: the daemon's kernel and Plan do.
	VIPLocalRoutes bool
	// MasqueradeBit is the fwmark bit used to request SNAT, 0-31 as in kube-proxy; nil
	// means DefaultMasqueradeBit. A pointer because 0 is a valid bit.
	MasqueradeBit *int
	// MaxEndpoints caps the real servers of one virtual server.
	MaxEndpoints int
	// RulesBackend holds the sets and fixed rules: RulesIptables (nil: the default) or
	// RulesNftables.
	RulesBackend *RulesBackend
	// IgnoreExternalIPs is the AllowServiceExternalIPs feature gate off: no Service's
	// externalIPs are programmed or bound (kube-proxy's ServicePort.ExternalIPs,
	// pkg/proxy/serviceport.go). The Service still counts as externally accessible, as
	// there.
	IgnoreExternalIPs bool
}

// WithDefaults fills unset fields with the defaults.
func (c Config) WithDefaults() Config {
	if c.Scheduler == "" {
		c.Scheduler = DefaultScheduler
	}
	if c.DummyDevice == "" {
		c.DummyDevice = DefaultDummyDevice
	}
	if c.MasqueradeBit == nil {
		bit := DefaultMasqueradeBit
		c.MasqueradeBit = &bit
	}
	if c.MaxEndpoints == 0 {
		c.MaxEndpoints = DefaultMaxEndpoints
	}
	if len(c.Families) == 0 {
		c.Families = []kernel.Family{kernel.IPv4, kernel.IPv6}
	}
	c.RulesBackend = c.rulesBackend()
	return c
}

// rulesBackend is the configured rules backend, RulesIptables when none is.
func (c *Config) rulesBackend() *RulesBackend {
	if c.RulesBackend == nil {
		return RulesIptables
	}
	return c.RulesBackend
}

// masqueradeMark is the fwmark KUBE-MARK-MASQ sets.
func (c *Config) masqueradeMark() uint32 {
	bit := DefaultMasqueradeBit
	if c.MasqueradeBit != nil {
		bit = *c.MasqueradeBit
	}
	return uint32(1) << bit
}

// servesFamily reports whether the node serves f.
func (c *Config) servesFamily(f kernel.Family) bool { return slices.Contains(c.Families, f) }

// nodePortIPs returns the node IPs of family f that NodePorts listen on.
func (c *Config) nodePortIPs(f kernel.Family) []netip.Addr {
	var out []netip.Addr
	for _, ip := range c.NodeIPs {
		if kernel.FamilyOf(ip) != f || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			continue
		}
		if !c.NodePortAllowed(ip) {
			continue
		}
		out = append(out, ip)
	}
	return out
}

// NodePortAllowed reports whether NodePorts may listen on ip by NodePortAddresses. The
// list is read per family, as kube-proxy's NewNodePortAddresses
// (pkg/proxy/util/nodeport_addresses.go) does: a family it names no prefix of is not
// restricted, so a list of IPv4 ranges leaves every IPv6 address serving NodePorts.
func (c *Config) NodePortAllowed(ip netip.Addr) bool {
	restricted := false
	for _, p := range c.NodePortAddresses {
		if p.Addr().Is4() != ip.Is4() {
			continue
		}
		if p.Contains(ip) {
			return true
		}
		restricted = true
	}
	return !restricted
}

// NodePortAllAddresses reports whether NodePortAddresses restricts no family.
func (c *Config) NodePortAllAddresses() bool {
	for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		if slices.ContainsFunc(c.NodePortAddresses, func(p netip.Prefix) bool {
			return kernel.FamilyOf(p.Addr()) == f && p.Bits() != 0
		}) {
			return false
		}
	}
	return true
}

// primaryIPs returns PrimaryIPs, or NodeIPs when the Node's own addresses are unknown.
func (c *Config) primaryIPs() []netip.Addr {
	if len(c.PrimaryIPs) > 0 {
		return c.PrimaryIPs
	}
	return c.NodeIPs
}

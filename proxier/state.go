package proxier

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// ServiceKey names a Service: namespace/name.
type ServiceKey struct{ Namespace, Name string }

// String returns "namespace/name".
func (k ServiceKey) String() string { return k.Namespace + "/" + k.Name }

// VirtualServerState is one desired virtual server with its real servers, sorted.
type VirtualServerState struct {
	kernel.VirtualServer
	RealServers RealServerList
	// UserChosen marks a virtual server on an address the Service's author chose (an
	// external IP or a load-balancer ingress), which the apiserver does not keep unique,
	// as opposed to one it allocated (a ClusterIP, a NodePort). An allocated claim always
	// wins a contested virtual server (claims.winner).
	UserChosen bool
}

// HealthCheck is a healthCheckNodePort to serve for an ETP=Local LoadBalancer.
type HealthCheck struct {
	Port uint16
	// LocalEndpoints counts distinct local ready endpoint IPs (terminating ones excluded).
	LocalEndpoints int
}

// OutFilter is one KUBE-IPVS-OUT-FILTER rule: the node itself may not reach an LB VIP
// whose source ranges exclude it (kubernetes#119656).
type OutFilter struct{ kernel.VSKey }

// ServiceState is the desired kernel state of one Service. All slices are sorted, so two
// states can be compared with Equal.
type ServiceState struct {
	Key            ServiceKey
	VirtualServers []VirtualServerState
	// Bind are the addresses to put on the dummy interface.
	Bind []netip.Addr
	// Members are the ipset entries the Service contributes, packed (members.go).
	Members MemberList
	// OutFilters are per-LB iptables rules.
	OutFilters  []OutFilter
	HealthCheck *HealthCheck
	// UDPFrontends are the Service's UDP frontends (VIP:port), for stale conntrack
	// cleanup when its endpoints change or it goes away.
	UDPFrontends []netip.AddrPort
	// NoLocalInternal and NoLocalExternal say, per family (FamilyIndex), whether a port
	// of the Service has endpoints but none local under an internal or external Local
	// policy: kube-proxy's no_local_endpoints metric counts such Services per family.
	NoLocalInternal, NoLocalExternal [2]bool
	// Problems lists what in the input could not be honoured.
	Problems []Problem
}

// Problem is bad input found while translating: what object is at fault and why.
type Problem struct {
	Kind      string // "Service" or "EndpointSlice"
	Namespace string
	Name      string
	Reason    string // an Event reason, CamelCase
	Message   string
}

// MaxMessage is the longest Problem message, in bytes: events.k8s.io/v1 caps an Event's
// note at 1 KiB, and a log line or an Event should not carry a 64 KiB annotation value.
const MaxMessage = 1024

// truncated ends a message that BoundMessage cut.
const truncated = "... (truncated)"

// BoundMessage returns msg cut to MaxMessage bytes, on a UTF-8 boundary, marked as cut.
// Values from API objects in a message are %q-quoted where they are formatted, so a
// message holds no raw newline either.
func BoundMessage(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	cut := MaxMessage - len(truncated)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + truncated
}

// String prints the problem for logs.
func (p Problem) String() string {
	return fmt.Sprintf("%s %s/%s: %s: %s", p.Kind, p.Namespace, p.Name, p.Reason, p.Message)
}

// Empty reports whether the state programs nothing.
func (s *ServiceState) Empty() bool {
	return s == nil || len(s.VirtualServers) == 0 && len(s.Bind) == 0 && s.Members.Len() == 0 && s.HealthCheck == nil
}

// Equal reports whether two states program the same kernel objects. Problems and the
// metric counters are not compared.
func (s *ServiceState) Equal(o *ServiceState) bool {
	if s.Empty() || o.Empty() {
		return s.Empty() == o.Empty()
	}
	return slices.EqualFunc(s.VirtualServers, o.VirtualServers, func(a, b VirtualServerState) bool {
		return a.VirtualServer.Equal(b.VirtualServer) && a.RealServers.Equal(b.RealServers) && a.UserChosen == b.UserChosen
	}) && slices.Equal(s.Bind, o.Bind) && s.Members.Equal(o.Members) &&
		slices.Equal(s.OutFilters, o.OutFilters) && slices.Equal(s.UDPFrontends, o.UDPFrontends) &&
		(s.HealthCheck == nil) == (o.HealthCheck == nil) && (s.HealthCheck == nil || *s.HealthCheck == *o.HealthCheck)
}

// String prints the state in ipvsadm-like form, for tests and debugging.
func (s *ServiceState) String() string {
	if s == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "service %s\n", s.Key)
	for _, vs := range s.VirtualServers {
		b.WriteString(kernel.FormatVirtualServer(vs.VirtualServer) + "\n")
		for rs := range vs.RealServers.All() {
			b.WriteString(kernel.FormatRealServer(rs) + "\n")
		}
	}
	for _, a := range s.Bind {
		fmt.Fprintf(&b, "bind %s\n", a)
	}
	for m := range s.Members.All() {
		fmt.Fprintf(&b, "add %s %s\n", m.Set, m.Entry)
	}
	for _, o := range s.OutFilters {
		fmt.Fprintf(&b, "out-filter %s\n", o.VSKey)
	}
	if s.HealthCheck != nil {
		fmt.Fprintf(&b, "health-check-node-port %d local-endpoints %d\n", s.HealthCheck.Port, s.HealthCheck.LocalEndpoints)
	}
	return b.String()
}

// normalize sorts and de-duplicates every list so Equal and String are order-free, and
// packs the members.
func (s *ServiceState) normalize(members []kernel.Member) {
	slices.SortFunc(members, compareMembers)
	s.Members = PackMembers(slices.Compact(members))
	slices.SortFunc(s.VirtualServers, func(a, b VirtualServerState) int { return kernel.CompareVSKeys(a.VSKey, b.VSKey) })
	// One address and port reached twice (a NodePort on a node IP that is also an
	// external IP) is one virtual server, allocated if either way is.
	vss := s.VirtualServers[:0]
	for _, v := range s.VirtualServers {
		if n := len(vss); n > 0 && vss[n-1].VSKey == v.VSKey {
			vss[n-1].UserChosen = vss[n-1].UserChosen && v.UserChosen
			continue
		}
		vss = append(vss, v)
	}
	clear(s.VirtualServers[len(vss):])
	s.VirtualServers = vss
	// Real-server lists are sorted when packed (PackRealServers).
	slices.SortFunc(s.Bind, netip.Addr.Compare)
	s.Bind = slices.Compact(s.Bind)
	slices.SortFunc(s.OutFilters, func(a, b OutFilter) int { return kernel.CompareVSKeys(a.VSKey, b.VSKey) })
	s.OutFilters = slices.Compact(s.OutFilters)
	slices.SortFunc(s.UDPFrontends, netip.AddrPort.Compare)
	s.UDPFrontends = slices.Compact(s.UDPFrontends)
	// One problem per port and family would repeat the same message.
	slices.SortFunc(s.Problems, func(a, b Problem) int { return strings.Compare(a.String(), b.String()) })
	s.Problems = slices.Compact(s.Problems)
}

func compareMembers(a, b kernel.Member) int {
	if c := strings.Compare(a.Set, b.Set); c != 0 {
		return c
	}
	return strings.Compare(a.Entry.String(), b.Entry.String())
}

package proxier

import (
	"fmt"
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// endpoint is one backend of one service port, with the conditions that pick it.
type endpoint struct {
	addr        netip.AddrPort
	ready       bool
	serving     bool
	terminating bool
	local       bool
	zoneHints   []string
	nodeHints   []string
}

// portKey selects the endpoints of one service port: slice ports match by name and protocol.
type portKey struct {
	name  string
	proto v1.Protocol
	fam   kernel.Family
}

// collectEndpoints gathers, per service port, the endpoints of the slices. Slices of the
// wrong address type for an endpoint, unparseable addresses and port 0 are reported and
// skipped. Duplicate addresses (one IP:port in several slices) keep the best copy, see
// betterCopy.
func collectEndpoints(cfg *Config, slices_ []*discovery.EndpointSlice, probs *[]Problem) map[portKey][]endpoint {
	out := map[portKey][]endpoint{}
	seen := map[portKey]map[netip.AddrPort]int{}
	for _, sl := range slices_ {
		if sl == nil {
			continue
		}
		var fam kernel.Family
		switch sl.AddressType {
		case discovery.AddressTypeIPv4:
			fam = kernel.IPv4
		case discovery.AddressTypeIPv6:
			fam = kernel.IPv6
		default:
			continue // FQDN slices carry no IPs to program
		}
		badFamily, special, firstSpecial := 0, 0, ""
		for _, p := range sl.Ports {
			if p.Port == nil || *p.Port <= 0 || *p.Port > 65535 {
				continue
			}
			key := portKey{proto: v1.ProtocolTCP, fam: fam}
			if p.Name != nil {
				key.name = *p.Name
			}
			if p.Protocol != nil {
				key.proto = *p.Protocol
			}
			if seen[key] == nil {
				seen[key] = map[netip.AddrPort]int{}
			}
			for _, e := range sl.Endpoints {
				if len(e.Addresses) == 0 {
					continue
				}
				a, ok := ParseAddr(e.Addresses[0])
				if !ok || kernel.FamilyOf(a) != fam {
					badFamily++
					continue
				}
				if why := specialAddress(a); why != "" {
					if special++; firstSpecial == "" {
						firstSpecial = a.String() + " is " + why
					}
					continue
				}
				ep := endpoint{
					addr:        netip.AddrPortFrom(a, uint16(*p.Port)),
					ready:       e.Conditions.Ready == nil || *e.Conditions.Ready,
					serving:     e.Conditions.Serving == nil || *e.Conditions.Serving,
					terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
					local:       e.NodeName != nil && *e.NodeName == cfg.NodeName && cfg.NodeName != "",
				}
				if e.Hints != nil {
					for _, z := range e.Hints.ForZones {
						ep.zoneHints = append(ep.zoneHints, z.Name)
					}
					for _, n := range e.Hints.ForNodes {
						ep.nodeHints = append(ep.nodeHints, n.Name)
					}
				}
				if i, dup := seen[key][ep.addr]; dup {
					if betterCopy(ep, out[key][i]) {
						out[key][i] = ep
					}
					continue
				}
				seen[key][ep.addr] = len(out[key])
				out[key] = append(out[key], ep)
			}
		}
		if badFamily > 0 {
			*probs = append(*probs, Problem{Kind: "EndpointSlice", Namespace: sl.Namespace, Name: sl.Name,
				Reason:  "InvalidEndpointAddress",
				Message: fmt.Sprintf("%d endpoint address(es) are not valid %s addresses; skipped", badFamily, sl.AddressType)})
		}
		if special > 0 {
			*probs = append(*probs, Problem{Kind: "EndpointSlice", Namespace: sl.Namespace, Name: sl.Name,
				Reason: "InvalidEndpointAddress",
				Message: fmt.Sprintf("%d endpoint address(es) are addresses the API refuses for an endpoint (%s); never programmed",
					special, firstSpecial)})
		}
	}
	return out
}

// specialAddress says why a can be neither a VIP nor an endpoint, or "" when it can.
// As an endpoint the API's validation refuses these (CVE-2021-25737: an endpoint on the
// node's loopback or on 169.254.169.254, the cloud metadata service, would make the node
// proxy to it), but a slice stored before that check, or written by hand to a file for
// plan, can hold them; multicast and broadcast addresses cannot be a real server either.
// As an external or LB VIP bound to kube-ipvs0, 127.0.0.1:80 would capture the node's
// own localhost and 0.0.0.0 every address (usableVIP).
func specialAddress(a netip.Addr) string {
	switch {
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	}
	return ""
}

// betterCopy reports whether a copy of an endpoint seen in a later slice replaces the
// one kept so far: a non-terminating copy beats a terminating one (kube-proxy's
// EndpointSliceCache: a reused pod IP prefers the running pod), then a ready copy beats
// a not-ready one, then a local copy beats a remote one (ETP/ITP=Local must not lose a
// local pod that also appears under another node during a move). Ready comes before
// local: a local copy that is not ready must not hide the same endpoint's ready copy
// (found by the random differential against kube-proxy, seed 5). On a tie the first copy,
// by slice name, stays, so the result does not depend on event order; kube-proxy keeps
// the last.
func betterCopy(cand, kept endpoint) bool {
	if cand.terminating != kept.terminating {
		return !cand.terminating
	}
	if cand.ready != kept.ready {
		return cand.ready
	}
	return cand.local && !kept.local
}

// categorize returns the endpoints for cluster-wide and for node-local traffic, following
// kube-proxy's CategorizeEndpoints (pkg/proxy/topology.go): ready endpoints, else serving
// and terminating ones; topology hints narrow the cluster set when every ready endpoint
// carries them and one names this node or zone.
func categorize(cfg *Config, eps []endpoint) (cluster, local []endpoint) {
	var ready, readyLocal []endpoint
	for _, e := range eps {
		if e.ready {
			ready = append(ready, e)
			if e.local {
				readyLocal = append(readyLocal, e)
			}
		}
	}
	cluster = filterByHints(cfg, ready)
	if len(ready) == 0 {
		for _, e := range eps {
			if e.serving && e.terminating {
				cluster = append(cluster, e)
			}
		}
	}
	local = readyLocal
	if len(local) == 0 {
		for _, e := range eps {
			if e.local && e.serving && e.terminating {
				local = append(local, e)
			}
		}
	}
	return cluster, local
}

// filterByHints applies PreferSameNode, then PreferSameZone hints.
func filterByHints(cfg *Config, ready []endpoint) []endpoint {
	if len(ready) == 0 {
		return ready
	}
	pick := func(hints func(endpoint) []string, want string) []endpoint {
		if want == "" {
			return nil
		}
		var out []endpoint
		for _, e := range ready {
			h := hints(e)
			if len(h) == 0 {
				return nil // one endpoint without hints: hints are not in use
			}
			if slices.Contains(h, want) {
				out = append(out, e)
			}
		}
		return out
	}
	if out := pick(func(e endpoint) []string { return e.nodeHints }, cfg.NodeName); len(out) > 0 {
		return out
	}
	if out := pick(func(e endpoint) []string { return e.zoneHints }, cfg.Zone); len(out) > 0 {
		return out
	}
	return ready
}

// realServers turns endpoints into weight-1 real servers, capped at max, sorted. The
// virtual servers of one port (ClusterIP, NodePorts, external and LB IPs) share the list:
// nothing writes to a desired state's real servers once it is made, and one copy per
// port rather than per virtual server is most of their memory at scale.
func realServers(eps []endpoint, max int) RealServerList {
	if len(eps) > max {
		eps = eps[:max]
	}
	dests := make([]netip.AddrPort, len(eps))
	for i, e := range eps {
		dests[i] = e.addr
	}
	return PackRealServers(dests)
}

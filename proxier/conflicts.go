package proxier

import (
	"fmt"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Two Services can claim one virtual server: the same external IP and port, the same
// load-balancer IP and port (the API allows both), the same NodePort (a file can hold
// it). One of them (claims.winner: an allocated ClusterIP or NodePort before a
// user-chosen external or LB IP, then the first by namespace/name) is programmed, and it
// must own every kernel object of that VIP:port, set members included: a loser's
// KUBE-NO-ENDPOINTS entry would REJECT new connections to a virtual server that has
// real servers, and an ETP=Local loser would put the VIP in the -LOCAL sets too. So a
// set member or out-filter tied to a virtual server counts only while its Service wins
// that virtual server; everything else a Service contributes is reference-counted as
// before.

// tieKind says how a set's entries are tied to virtual servers.
type tieKind uint8

const (
	untied tieKind = iota
	// tiedIPPort: the entry's IP, protocol and port are the virtual server's.
	tiedIPPort
	// tiedPortTCP, tiedPortUDP: bitmap:port NodePort sets; the entry is the port of the
	// Service's NodePort virtual servers on node IPs.
	tiedPortTCP
	tiedPortUDP
)

// setTies maps every set name (both families) to how its entries are tied.
var setTies = func() map[string]tieKind {
	m := map[string]tieKind{}
	for base, k := range map[string]tieKind{
		setNoEndpoints: tiedIPPort, setExternalNoLocal: tiedIPPort, setClusterIP: tiedIPPort,
		setExternalIP: tiedIPPort, setExternalIPLocal: tiedIPPort, setLoadBalancer: tiedIPPort,
		setLoadBalancerLocal: tiedIPPort, setLoadBalancerFW: tiedIPPort, setLoadBalancerSrcCIDR: tiedIPPort,
		setLoadBalancerSrcIP: tiedIPPort, setNodePortSCTP: tiedIPPort, setNodePortLocalSCTP: tiedIPPort,
		setNodePortTCP: tiedPortTCP, setNodePortLocalTCP: tiedPortTCP,
		setNodePortUDP: tiedPortUDP, setNodePortLocalUDP: tiedPortUDP,
	} {
		m[SetName(base, kernel.IPv4)], m[SetName(base, kernel.IPv6)] = k, k
	}
	return m
}()

func (s *ServiceState) hasVS(k kernel.VSKey) bool {
	_, found := slices.BinarySearchFunc(s.VirtualServers, k, func(v VirtualServerState, k kernel.VSKey) int {
		return kernel.CompareVSKeys(v.VSKey, k)
	})
	return found
}

// tiedStatus reports whether st's member m is tied to any of st's virtual servers and
// whether st wins all of them (an untied member is "won"). It allocates nothing: it runs
// for every member of every change.
func (d *Desired) tiedStatus(st *ServiceState, m kernel.Member) (tied, won bool) {
	kind := setTies[m.Set]
	switch kind {
	case untied:
		return false, true
	case tiedIPPort:
		k := kernel.VSKey{Protocol: m.Entry.Protocol, Address: m.Entry.IP, Port: m.Entry.Port}
		if !st.hasVS(k) {
			return false, true
		}
		return true, d.winsKey(st, k)
	}
	proto := kernel.TCP
	if kind == tiedPortUDP {
		proto = kernel.UDP
	}
	won = true
	for _, vs := range st.VirtualServers {
		// NodePort virtual servers are on node IPs, which a Service never binds.
		if vs.Protocol == proto && vs.Port == m.Entry.Port && !slices.Contains(st.Bind, vs.Address) {
			tied = true
			won = won && d.winsKey(st, vs.VSKey)
		}
	}
	return tied, won
}

// countsMember reports whether st's member m is wanted now: untied, or st wins its
// virtual servers.
func (d *Desired) countsMember(st *ServiceState, m kernel.Member) bool {
	_, won := d.tiedStatus(st, m)
	return won
}

// winsKey reports whether st is programmed on k.
func (d *Desired) winsKey(st *ServiceState, k kernel.VSKey) bool {
	c := d.vs.Get(k)
	if c == nil {
		return false
	}
	_, w := c.winner()
	return w == st.Key
}

// countsOutFilter reports whether st's out-filter o is wanted now.
func (d *Desired) countsOutFilter(st *ServiceState, o OutFilter) bool {
	return !st.hasVS(o.VSKey) || d.winsKey(st, o.VSKey)
}

// rivals returns the other Services claiming any virtual server of st.
func (d *Desired) rivals(st *ServiceState) []*ServiceState {
	var out []*ServiceState
	for _, vs := range st.VirtualServers {
		c := d.vs.Get(vs.VSKey)
		if c == nil || c.len() == 0 || c.len() == 1 && c.key == st.Key {
			continue // no one else claims it
		}
		for _, k := range c.keys() {
			if o := d.services[k]; k != st.Key && o != nil && !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	return out
}

// tiedWanted is what of a Service's tied members and out-filters counts now.
type tiedWanted struct {
	members    []kernel.Member
	outFilters []OutFilter
}

func (d *Desired) tiedWanted(st *ServiceState) tiedWanted {
	var w tiedWanted
	for m := range st.Members.All() {
		if tied, won := d.tiedStatus(st, m); tied && won {
			w.members = append(w.members, m)
		}
	}
	for _, o := range st.OutFilters {
		if st.hasVS(o.VSKey) && d.winsKey(st, o.VSKey) {
			w.outFilters = append(w.outFilters, o)
		}
	}
	return w
}

// rivalsBefore returns the Services that share a virtual server with st and what each
// of them contributes before st's claims change, for settleRivals to compare against.
func (d *Desired) rivalsBefore(st *ServiceState) ([]*ServiceState, []tiedWanted) {
	rivals := d.rivals(st)
	before := make([]tiedWanted, len(rivals))
	for i, o := range rivals {
		before[i] = d.tiedWanted(o)
	}
	return rivals, before
}

// settleRivals applies what st's change did to its rivals' contributions; a rival may
// win or lose a virtual server, so the owners change too.
func (d *Desired) settleRivals(st *ServiceState, rivals []*ServiceState, before []tiedWanted, delta *Delta) {
	if len(rivals) == 0 {
		return
	}
	d.reconcileRivals(rivals, before, delta)
	d.touched[st.Key] = struct{}{}
}

// reconcileRivals applies the change of the rivals' tied objects between before (their
// wanted objects before a claim changed) and now, and marks them for conflict reports.
func (d *Desired) reconcileRivals(rivals []*ServiceState, before []tiedWanted, delta *Delta) {
	for i, o := range rivals {
		after := d.tiedWanted(o)
		for _, m := range before[i].members {
			if !slices.Contains(after.members, m) {
				d.removeMember(m)
			}
		}
		for _, m := range after.members {
			if !slices.Contains(before[i].members, m) {
				d.addMember(m, delta)
			}
		}
		for _, f := range before[i].outFilters {
			if !slices.Contains(after.outFilters, f) {
				d.removeOutFilter(f, delta)
			}
		}
		for _, f := range after.outFilters {
			if !slices.Contains(before[i].outFilters, f) {
				d.addOutFilter(f, delta)
			}
		}
		d.touched[o.Key] = struct{}{}
	}
}

// TakeConflictChanges returns the Services whose conflicts may have changed since the
// last call (a Service that claims a contested virtual server was set, or a rival of it),
// for the caller to report Conflicts of each.
func (d *Desired) TakeConflictChanges() []ServiceKey {
	if len(d.touched) == 0 {
		return nil
	}
	out := make([]ServiceKey, 0, len(d.touched))
	for k := range d.touched {
		out = append(out, k)
	}
	clear(d.touched)
	return out
}

// Conflicts returns a VirtualServerConflict Problem for every virtual server that k
// claims and another Service wins.
func (d *Desired) Conflicts(k ServiceKey) []Problem {
	st := d.services[k]
	if st == nil {
		return nil
	}
	var out []Problem
	for _, vs := range st.VirtualServers {
		c := d.vs.Get(vs.VSKey)
		if c == nil {
			continue
		}
		ws, w := c.winner()
		if w == k {
			continue
		}
		why := "the first by namespace/name"
		if !ws.UserChosen && vs.UserChosen {
			why = "its ClusterIP or NodePort, which the apiserver allocated to it; this Service's externalIPs or load-balancer ingress may not take it"
		}
		out = append(out, Problem{Kind: "Service", Namespace: k.Namespace, Name: k.Name, Reason: "VirtualServerConflict",
			Message: fmt.Sprintf("virtual server %s is also claimed by Service %s, which is programmed there (%s); "+
				"this Service's traffic to it goes to %s's endpoints", vs.VSKey, w, why, w)})
	}
	return out
}

// OwnershipSets lists, for both families, our sets whose entries name virtual servers on
// node IPs: NodePorts (by port for TCP and UDP, by IP and port for SCTP) and external or
// load-balancer IPs. A virtual server on a node IP that one of them names was programmed
// by us (or by kube-proxy's IPVS mode, whose sets these are), whatever its port.
func OwnershipSets() []string {
	var out []string
	for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		for _, base := range []string{setNodePortTCP, setNodePortLocalTCP, setNodePortUDP, setNodePortLocalUDP,
			setNodePortSCTP, setNodePortLocalSCTP, setExternalIP, setExternalIPLocal, setLoadBalancer, setLoadBalancerLocal} {
			out = append(out, SetName(base, f))
		}
	}
	return out
}

// NamedKey returns the virtual server that entry e of set names: for the bitmap:port
// NodePort sets only protocol and port (anyAddress: the port on every node IP); ok is
// false for sets that name no virtual server.
func NamedKey(set string, e kernel.SetEntry) (k kernel.VSKey, anyAddress, ok bool) {
	switch setTies[set] {
	case tiedPortTCP:
		return kernel.VSKey{Protocol: kernel.TCP, Port: e.Port}, true, true
	case tiedPortUDP:
		return kernel.VSKey{Protocol: kernel.UDP, Port: e.Port}, true, true
	case tiedIPPort:
		return kernel.VSKey{Protocol: e.Protocol, Address: e.IP, Port: e.Port}, false, true
	}
	return kernel.VSKey{}, false, false
}

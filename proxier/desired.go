package proxier

import (
	"iter"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Desired is the node's whole desired state: the union of every ServiceState, with
// reference counts so that an object two Services share (an address, a set member, a
// virtual server) lives while any of them wants it. Updating one Service costs time in
// proportion to that Service's objects, never to the number of Services.
//
// When two Services claim the same virtual server (bad input), the one with the smaller
// namespace/name wins, deterministically, with every set member and rule of that
// virtual server (conflicts.go).
type Desired struct {
	services map[ServiceKey]*ServiceState
	vs       kernel.VSMap[*claims]
	addrs    kernel.AddrMap[int32]
	// members counts the Services that want each set entry, by set name.
	members    map[string]*entryCounts
	outFilters map[OutFilter]int
	// gone holds, during one Set, the members the old state's removal left unwanted; the
	// new state's members take theirs back, so only a net change reaches the delta (the
	// syncer keeps no copy of the sets to compare with).
	gone map[kernel.Member]struct{}
	// noLocal counts the Services with NoLocalInternal ([f][0]) and NoLocalExternal
	// ([f][1]) set, per family index f.
	noLocal [2][2]int
	// touched: Services whose virtual-server conflicts may have changed (conflicts.go).
	touched map[ServiceKey]struct{}
}

// NewDesired returns an empty desired state.
func NewDesired() *Desired {
	return &Desired{
		services:   map[ServiceKey]*ServiceState{},
		members:    map[string]*entryCounts{},
		gone:       map[kernel.Member]struct{}{},
		outFilters: map[OutFilter]int{},
		touched:    map[ServiceKey]struct{}{},
	}
}

// Delta collects the objects whose desired state may have changed.
type Delta struct {
	VirtualServers map[kernel.VSKey]struct{}
	Addresses      map[netip.Addr]struct{}
	Members        map[kernel.Member]struct{}
	RulesChanged   bool
}

// NewDelta returns an empty delta.
func NewDelta() *Delta {
	return &Delta{VirtualServers: map[kernel.VSKey]struct{}{}, Addresses: map[netip.Addr]struct{}{}, Members: map[kernel.Member]struct{}{}}
}

// Empty reports whether nothing changed.
func (d *Delta) Empty() bool {
	return len(d.VirtualServers) == 0 && len(d.Addresses) == 0 && len(d.Members) == 0 && !d.RulesChanged
}

// Service returns the current state of one Service, or nil.
func (d *Desired) Service(k ServiceKey) *ServiceState { return d.services[k] }

// States yields the state of every Service, in no order.
func (d *Desired) States() iter.Seq[*ServiceState] { return maps.Values(d.services) }

// Services returns every Service key with a state, sorted.
func (d *Desired) Services() []ServiceKey {
	return slices.SortedFunc(maps.Keys(d.services), func(a, b ServiceKey) int { return strings.Compare(a.String(), b.String()) })
}

// Set replaces the state of st.Key with st (an empty st removes the Service) and records
// in delta (if not nil) every object whose desire may have changed. It reports whether
// the Service's kernel state changed at all.
func (d *Desired) Set(st *ServiceState, delta *Delta) bool {
	old := d.services[st.Key]
	if old != nil {
		d.countNoLocal(old, -1)
	}
	if !st.Empty() {
		d.countNoLocal(st, 1)
	}
	if old.Equal(st) {
		if !st.Empty() {
			d.services[st.Key] = st // keep the newest problems and counters
		}
		return false
	}
	if delta == nil {
		delta = NewDelta()
	}
	if old != nil {
		d.remove(old, delta)
	}
	if st.Empty() {
		delete(d.services, st.Key)
	} else {
		d.services[st.Key] = st
		d.add(st, delta)
	}
	for m := range d.gone {
		delta.Members[m] = struct{}{}
	}
	clear(d.gone)
	return true
}

func (d *Desired) add(st *ServiceState, delta *Delta) {
	rivals, before := d.rivalsBefore(st)
	for i := range st.VirtualServers {
		vs := &st.VirtualServers[i]
		c := d.vs.Get(vs.VSKey)
		if c == nil {
			c = &claims{}
			d.vs.Set(vs.VSKey, c)
		}
		c.set(st.Key, vs)
		delta.VirtualServers[vs.VSKey] = struct{}{}
	}
	d.settleRivals(st, rivals, before, delta)
	for _, a := range st.Bind {
		n := d.addrs.Get(a) + 1
		if d.addrs.Set(a, n); n == 1 {
			delta.Addresses[a] = struct{}{}
		}
	}
	for m := range st.Members.All() {
		if d.countsMember(st, m) {
			d.addMember(m, delta)
		}
	}
	for _, o := range st.OutFilters {
		if d.countsOutFilter(st, o) {
			d.addOutFilter(o, delta)
		}
	}
}

func (d *Desired) remove(st *ServiceState, delta *Delta) {
	rivals, before := d.rivalsBefore(st)
	// What st contributes is decided by the claims as they are, before it leaves them.
	for m := range st.Members.All() {
		if d.countsMember(st, m) {
			d.removeMember(m)
		}
	}
	for _, o := range st.OutFilters {
		if d.countsOutFilter(st, o) {
			d.removeOutFilter(o, delta)
		}
	}
	for _, vs := range st.VirtualServers {
		if c := d.vs.Get(vs.VSKey); c != nil {
			if c.remove(st.Key); c.len() == 0 {
				d.vs.Delete(vs.VSKey)
			}
		}
		delta.VirtualServers[vs.VSKey] = struct{}{}
	}
	d.settleRivals(st, rivals, before, delta)
	for _, a := range st.Bind {
		if n := d.addrs.Get(a) - 1; n > 0 {
			d.addrs.Set(a, n)
		} else {
			d.addrs.Delete(a)
			delta.Addresses[a] = struct{}{}
		}
	}
}

// addMember counts one more Service wanting m.
func (d *Desired) addMember(m kernel.Member, delta *Delta) {
	set := d.members[m.Set]
	if set == nil {
		set = &entryCounts{}
		d.members[m.Set] = set
	}
	if set.add(m.Entry) {
		if _, ok := d.gone[m]; ok {
			delete(d.gone, m) // wanted before and after: no change
		} else {
			delta.Members[m] = struct{}{}
		}
	}
}

// removeMember counts one Service less wanting m; Set reports it once unwanted.
func (d *Desired) removeMember(m kernel.Member) {
	if set := d.members[m.Set]; set != nil && set.remove(m.Entry) {
		d.gone[m] = struct{}{}
	}
}

func (d *Desired) addOutFilter(o OutFilter, delta *Delta) {
	if d.outFilters[o]++; d.outFilters[o] == 1 {
		delta.RulesChanged = true
	}
}

func (d *Desired) removeOutFilter(o OutFilter, delta *Delta) {
	if d.outFilters[o]--; d.outFilters[o] <= 0 {
		delete(d.outFilters, o)
		delta.RulesChanged = true
	}
}

// VirtualServer returns the desired virtual server for key and its owner, if any.
func (d *Desired) VirtualServer(key kernel.VSKey) (*VirtualServerState, ServiceKey, bool) {
	c := d.vs.Get(key)
	if c == nil || c.len() == 0 {
		return nil, ServiceKey{}, false
	}
	st, owner := c.winner()
	return st, owner, true
}

// NoLocal returns how many Services of family f use the fallback of an internal or
// external Local traffic policy because they have no local endpoint.
func (d *Desired) NoLocal(f kernel.Family) (internal, external int) {
	n := d.noLocal[FamilyIndex(f)]
	return n[0], n[1]
}

func (d *Desired) countNoLocal(st *ServiceState, by int) {
	for i := range d.noLocal {
		if st.NoLocalInternal[i] {
			d.noLocal[i][0] += by
		}
		if st.NoLocalExternal[i] {
			d.noLocal[i][1] += by
		}
	}
}

// FamilyIndex is 0 for IPv4 and 1 for IPv6, for per-family arrays.
func FamilyIndex(f kernel.Family) int {
	if f == kernel.IPv6 {
		return 1
	}
	return 0
}

// Len returns the number of Services with a state.
func (d *Desired) Len() int { return len(d.services) }

// VirtualServerOwners returns how many Services claim key.
func (d *Desired) VirtualServerOwners(key kernel.VSKey) int {
	if c := d.vs.Get(key); c != nil {
		return c.len()
	}
	return 0
}

// VirtualServerKeySeq yields every desired virtual server key, without a copy.
func (d *Desired) VirtualServerKeySeq() iter.Seq[kernel.VSKey] { return d.vs.Keys() }

// VirtualServerCount returns the number of virtual server keys claimed.
func (d *Desired) VirtualServerCount() int { return d.vs.Len() }

// AddressSeq yields every address to bind, without a copy.
func (d *Desired) AddressSeq() iter.Seq[netip.Addr] { return d.addrs.Keys() }

// VirtualServerKeys returns every desired virtual server key.
func (d *Desired) VirtualServerKeys() []kernel.VSKey { return slices.Collect(d.vs.Keys()) }

// HasAddress reports whether addr should be bound.
func (d *Desired) HasAddress(a netip.Addr) bool { return d.addrs.Get(a) > 0 }

// Addresses returns every address to bind.
func (d *Desired) Addresses() []netip.Addr { return slices.Collect(d.addrs.Keys()) }

// HasMember reports whether m should be in its set.
func (d *Desired) HasMember(m kernel.Member) bool { return d.members[m.Set].has(m.Entry) }

// SetLen returns how many entries set should hold.
func (d *Desired) SetLen(set string) int { return d.members[set].len() }

// SetEntries returns the entries set should hold, in no order.
func (d *Desired) SetEntries(set string) iter.Seq[kernel.SetEntry] {
	return d.members[set].all()
}

// Members returns every desired set member.
func (d *Desired) Members() []kernel.Member {
	var out []kernel.Member
	for set, entries := range d.members {
		for e := range entries.all() {
			out = append(out, kernel.Member{Set: set, Entry: e})
		}
	}
	return out
}

// OutFilters returns the KUBE-IPVS-OUT-FILTER rules, sorted.
func (d *Desired) OutFilters() []OutFilter {
	return slices.SortedFunc(maps.Keys(d.outFilters), func(a, b OutFilter) int { return kernel.CompareVSKeys(a.VSKey, b.VSKey) })
}

// HealthChecks returns the healthCheckNodePorts by Service.
func (d *Desired) HealthChecks() map[ServiceKey]HealthCheck {
	out := map[ServiceKey]HealthCheck{}
	for k, st := range d.services {
		if st.HealthCheck != nil {
			out[k] = *st.HealthCheck
		}
	}
	return out
}

// Plan is the whole desired state rendered for an operator, in the order `ipvs-proxier
// plan` prints it: the IPVS table as `ipvsadm -Ln`, the dummy interface's addresses (or
// with VIPLocalRoutes the local routes, as `ip route show` lists them),
// then the sets and rules as the rules backend's tools show them (RulesBackend's plan:
// for iptables the sets as `ipset save` and the rules as iptables-restore input, for
// nftables each family's table as `nft list table` prints it).
func (d *Desired) Plan(cfg *Config) string {
	var b strings.Builder
	var vss []kernel.VirtualServer
	rss := map[kernel.VSKey][]kernel.RealServer{}
	for key := range d.vs.Keys() {
		st, _, _ := d.VirtualServer(key)
		vss = append(vss, st.VirtualServer)
		rss[key] = st.RealServers.Slice()
	}
	b.WriteString(kernel.FormatIPVS(vss, rss))
	if cfg.VIPLocalRoutes {
		// Route mode leaves the dummy without addresses; 210 is linux.RouteProtocol.
		b.WriteString("\n# local routes: ip route show table local proto 210; ip -6 route show table local proto 210\n")
		b.WriteString(kernel.FormatLocalRoutes(d.Addresses()))
	} else {
		b.WriteString("\n# addresses on " + cfg.DummyDevice + "\n")
		b.WriteString(kernel.FormatAddresses(cfg.DummyDevice, d.Addresses()))
	}
	members := map[string][]kernel.SetEntry{}
	for set, entries := range d.members {
		members[set] = slices.AppendSeq(members[set], entries.all())
	}
	// Each hash set with the capacity the daemon gives it (SetCapacity).
	sets := Sets(cfg.Families)
	for i := range sets {
		sets[i] = Sized(sets[i], len(members[sets[i].Name]))
	}
	cfg.rulesBackend().plan(&b, planRules{families: cfg.Families, sets: sets, members: members,
		rules: func(f kernel.Family) *kernel.Ruleset { return Rules(cfg, f, d.OutFilters()) }})
	return b.String()
}

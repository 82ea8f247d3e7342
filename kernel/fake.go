package kernel

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// Fake is a stateful in-memory kernel. It returns the errors the kernel returns (wrapped
// ErrExist / ErrNotFound), counts every operation, and prints its whole state with Dump.
// It is safe for concurrent use.
type Fake struct {
	mu    sync.Mutex
	vs    map[VSKey]*fakeVS
	links map[string]map[netip.Addr]struct{}
	// realLinks are devices of another type than dummy (AddRealLink).
	realLinks map[string]bool
	sets      map[string]*fakeSet
	rules     map[Family]string
	// ruleset is what Restore was given, for the tracer; nil where RestoreText or Load
	// wrote the rules.
	ruleset map[Family]*Ruleset
	flows   map[fakeFlow]struct{}
	stats   ConntrackStats
	ops     map[string]int
	dumped  int // objects the List* dumps returned
	// KnownSchedulers lists the scheduler modules the fake kernel can load; nil means the
	// full in-tree list.
	KnownSchedulers []string
	// Uncounted makes CountEntries answer -1, as a backend that cannot count a set's
	// members without listing them (nftables) does.
	Uncounted bool
}

type fakeVS struct {
	vs    VirtualServer
	rss   map[netip.AddrPort]RealServer
	stats VSStats
}

type fakeSet struct {
	set     Set
	entries map[SetEntry]struct{}
}

type fakeFlow struct{ origDst, replySrc netip.AddrPort }

// InTreeSchedulers are the IPVS schedulers Linux ships (net/netfilter/ipvs/Kconfig).
var InTreeSchedulers = []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "mh", "fo", "ovf", "twos"}

// NewFake returns an empty fake kernel.
func NewFake() *Fake {
	return &Fake{
		vs:    map[VSKey]*fakeVS{},
		links: map[string]map[netip.Addr]struct{}{},
		sets:  map[string]*fakeSet{},
		rules: map[Family]string{}, ruleset: map[Family]*Ruleset{},
		flows: map[fakeFlow]struct{}{},
		ops:   map[string]int{},
	}
}

// Kernel returns the fake as a Kernel bundle.
func (f *Fake) Kernel() Kernel {
	return Kernel{IPVS: f, Addresses: f, Sets: f, Rules: f, Conntrack: f}
}

func (f *Fake) count(op string) { f.ops[op]++ }

// Ops returns a copy of the operation counters, keyed by method name. Read-only methods
// (List*, Save, Stats) are counted too.
func (f *Fake) Ops() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.ops)
}

// ResetOps zeroes the operation counters and the dumped-object count.
func (f *Fake) ResetOps() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.ops)
	f.dumped = 0
}

// Dumped returns how many objects (virtual servers, real servers, addresses, set members)
// the List* dumps have returned since the last ResetOps: the denominator of a full sync's
// allocations per dumped object.
func (f *Fake) Dumped() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dumped
}

// ListVirtualServers implements IPVS. Like the kernel, it reports the HASHED flag.
func (f *Fake) ListVirtualServers() ([]DumpedVS, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count("ListVirtualServers")
	out := make([]DumpedVS, 0, len(f.vs))
	for _, v := range f.vs {
		vs := v.vs
		vs.Flags |= FlagHashed
		out = append(out, DumpedVS{vs, v.stats})
	}
	f.dumped += len(out)
	return out, nil
}

// LookupVirtualServers implements IPVS: a key the fake has no virtual server for gives a
// zero entry, as the kernel's ESRCH does.
func (f *Fake) LookupVirtualServers(keys []VSKey) ([]DumpedVS, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count("LookupVirtualServers")
	out := make([]DumpedVS, len(keys))
	for i, k := range keys {
		if v, ok := f.vs[k]; ok {
			vs := v.vs
			vs.Flags |= FlagHashed
			out[i] = DumpedVS{vs, v.stats}
			f.dumped++
		}
	}
	return out, nil
}

// AddVirtualServer adds a virtual server, as a writer behind the syncer's back would (and
// WriteVirtualServers does, op by op).
func (f *Fake) AddVirtualServer(vs VirtualServer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkVS("AddVirtualServer", vs); err != nil {
		return err
	}
	if _, ok := f.vs[vs.VSKey]; ok {
		return fmt.Errorf("virtual server %s: %w", vs.VSKey, ErrExist)
	}
	vs.Flags &= OwnFlags
	f.vs[vs.VSKey] = &fakeVS{vs: vs, rss: map[netip.AddrPort]RealServer{}}
	return nil
}

// checkVS counts the operation op on vs and refuses vs as the kernel would.
func (f *Fake) checkVS(op string, vs VirtualServer) error {
	f.count(op)
	known := f.KnownSchedulers
	if known == nil {
		known = InTreeSchedulers
	}
	if !slices.Contains(known, vs.Scheduler) {
		// The kernel answers ENOENT when it cannot load ip_vs_<sched>.
		return fmt.Errorf("virtual server %s: scheduler %q: %w", vs.VSKey, vs.Scheduler, ErrNotFound)
	}
	if !vs.Address.IsValid() || vs.Port == 0 {
		return fmt.Errorf("virtual server %s: invalid argument", vs.VSKey)
	}
	return nil
}

// UpdateVirtualServer changes a virtual server in place.
func (f *Fake) UpdateVirtualServer(vs VirtualServer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkVS("UpdateVirtualServer", vs); err != nil {
		return err
	}
	v, ok := f.vs[vs.VSKey]
	if !ok {
		return fmt.Errorf("virtual server %s: %w", vs.VSKey, ErrNotFound)
	}
	vs.Flags &= OwnFlags
	v.vs = vs
	return nil
}

// DeleteVirtualServer deletes a virtual server and its real servers.
func (f *Fake) DeleteVirtualServer(key VSKey) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count("DeleteVirtualServer")
	if _, ok := f.vs[key]; !ok {
		return fmt.Errorf("virtual server %s: %w", key, ErrNotFound)
	}
	delete(f.vs, key)
	return nil
}

// ListRealServers implements IPVS.
func (f *Fake) ListRealServers(key VSKey) ([]RealServer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count("ListRealServers")
	v, ok := f.vs[key]
	if !ok {
		return nil, fmt.Errorf("virtual server %s: %w", key, ErrNotFound)
	}
	f.dumped += len(v.rss)
	return slices.Collect(maps.Values(v.rss)), nil
}

func (f *Fake) realServerOp(op string, key VSKey, rs RealServer, fn func(v *fakeVS, exists bool) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count(op)
	v, ok := f.vs[key]
	if !ok {
		return fmt.Errorf("virtual server %s: %w", key, ErrNotFound)
	}
	if FamilyOf(rs.Address) != FamilyOf(key.Address) {
		return fmt.Errorf("real server %s on %s: address family not supported", rs.AddrPort(), key)
	}
	_, exists := v.rss[rs.AddrPort()]
	return fn(v, exists)
}

// AddRealServer implements IPVS.
func (f *Fake) AddRealServer(key VSKey, rs RealServer) error {
	return f.realServerOp("AddRealServer", key, rs, func(v *fakeVS, exists bool) error {
		if exists {
			return fmt.Errorf("real server %s on %s: %w", rs.AddrPort(), key, ErrExist)
		}
		v.rss[rs.AddrPort()] = RealServer{Address: rs.Address, Port: rs.Port, Weight: rs.Weight}
		return nil
	})
}

// UpdateRealServer implements IPVS.
func (f *Fake) UpdateRealServer(key VSKey, rs RealServer) error {
	return f.realServerOp("UpdateRealServer", key, rs, func(v *fakeVS, exists bool) error {
		if !exists {
			return fmt.Errorf("real server %s on %s: %w", rs.AddrPort(), key, ErrNotFound)
		}
		cur := v.rss[rs.AddrPort()]
		cur.Weight = rs.Weight
		v.rss[rs.AddrPort()] = cur
		return nil
	})
}

// DeleteRealServer implements IPVS.
func (f *Fake) DeleteRealServer(key VSKey, rs RealServer) error {
	return f.realServerOp("DeleteRealServer", key, rs, func(v *fakeVS, exists bool) error {
		if !exists {
			return fmt.Errorf("real server %s on %s: %w", rs.AddrPort(), key, ErrNotFound)
		}
		delete(v.rss, rs.AddrPort())
		return nil
	})
}

// SetConnections sets the connection counters the fake reports for a destination, so
// tests can exercise graceful termination.
func (f *Fake) SetConnections(key VSKey, dest netip.AddrPort, active, inactive int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.vs[key]; ok {
		if rs, ok := v.rss[dest]; ok {
			rs.ActiveConns, rs.InactiveConns = int32(active), int32(inactive)
			v.rss[dest] = rs
		}
	}
}

// AddTraffic adds to a virtual server's counters, as traffic through it would.
func (f *Fake) AddTraffic(key VSKey, s VSStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.vs[key]; ok {
		v.stats.Connections += s.Connections
		v.stats.PacketsIn += s.PacketsIn
		v.stats.PacketsOut += s.PacketsOut
		v.stats.BytesIn += s.BytesIn
		v.stats.BytesOut += s.BytesOut
	}
}

// EnsureDummy implements Addresses.
func (f *Fake) EnsureDummy(dev string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count("EnsureDummy")
	if f.realLinks[dev] {
		return fmt.Errorf("%s: %w", dev, ErrNotDummy)
	}
	if _, ok := f.links[dev]; !ok {
		f.links[dev] = map[netip.Addr]struct{}{}
	}
	return nil
}

// AddRealLink makes dev a non-dummy interface (an eth0), for the tests that must see
// EnsureDummy refuse it.
func (f *Fake) AddRealLink(dev string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.realLinks == nil {
		f.realLinks = map[string]bool{}
	}
	f.realLinks[dev] = true
}

// ListAddresses implements Addresses.
func (f *Fake) ListAddresses(dev string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	err := f.onLink("ListAddresses", dev, func(l map[netip.Addr]struct{}) error {
		addrs = slices.Collect(maps.Keys(l))
		f.dumped += len(addrs)
		return nil
	})
	return addrs, err
}

// onLink counts op and, under the lock, runs fn on dev's addresses; a missing
// link is ErrNotFound, as netlink answers.
func (f *Fake) onLink(op, dev string, fn func(l map[netip.Addr]struct{}) error) error {
	return onNamed(f, op, "link", dev, f.links, fn)
}

// onNamed counts op and runs fn under the lock on the object key of m (a map NewFake
// makes and nothing replaces), or fails with ErrNotFound naming the missing kind key.
func onNamed[V any](f *Fake, op, kind, key string, m map[string]V, fn func(V) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count(op)
	v, ok := m[key]
	if !ok {
		return fmt.Errorf("%s %s: %w", kind, key, ErrNotFound)
	}
	return fn(v)
}

// BindAddress implements Addresses.
func (f *Fake) BindAddress(dev string, addr netip.Addr) error {
	return f.onLink("BindAddress", dev, func(l map[netip.Addr]struct{}) error {
		if _, ok := l[addr]; ok {
			return fmt.Errorf("address %s on %s: %w", addr, dev, ErrExist)
		}
		l[addr] = struct{}{}
		return nil
	})
}

// UnbindAddress implements Addresses.
func (f *Fake) UnbindAddress(dev string, addr netip.Addr) error {
	return f.onLink("UnbindAddress", dev, func(l map[netip.Addr]struct{}) error {
		if _, ok := l[addr]; !ok {
			return fmt.Errorf("address %s on %s: %w", addr, dev, ErrNotFound)
		}
		delete(l, addr)
		return nil
	})
}

// EnsureSet implements Sets.
func (f *Fake) EnsureSet(s Set) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count("EnsureSet")
	if cur, ok := f.sets[s.Name]; ok {
		if cur.set.Type != s.Type || (s.Type != BitmapPort && cur.set.Family != s.Family) {
			// ipset refuses to re-create a set with another type (kubernetes#77265).
			return fmt.Errorf("set %s exists as %s: %w", s.Name, cur.set.Type, ErrExist)
		}
		if RemakeSet(cur.set.MaxElem, s.MaxElem, len(cur.entries)) {
			f.count("ResizeSet")
			cur.set.MaxElem = s.MaxElem
		}
		return nil
	}
	f.sets[s.Name] = &fakeSet{set: s, entries: map[SetEntry]struct{}{}}
	return nil
}

// CountEntries implements Sets.
func (f *Fake) CountEntries(name string) (int, error) {
	n := 0
	err := f.onSet("CountEntries", name, func(s *fakeSet) error {
		n = len(s.entries)
		return nil
	})
	if f.Uncounted && err == nil {
		return -1, nil
	}
	return n, err
}

// onSet counts op and, under the lock, runs fn on the named set; a missing set
// is ErrNotFound, as ipset answers.
func (f *Fake) onSet(op, name string, fn func(s *fakeSet) error) error {
	return onNamed(f, op, "set", name, f.sets, fn)
}

// FlushSet removes every member of a set, as `ipset flush` would.
func (f *Fake) FlushSet(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.sets[name]; ok {
		clear(s.entries)
	}
}

// ListEntries implements Sets.
func (f *Fake) ListEntries(name string) ([]SetEntry, error) {
	var es []SetEntry
	err := f.onSet("ListEntries", name, func(s *fakeSet) error {
		es = slices.Collect(maps.Keys(s.entries))
		f.dumped += len(es)
		return nil
	})
	return es, err
}

// EachEntry implements Sets.
func (f *Fake) EachEntry(name string, restart func(), each func(SetEntry)) error {
	return f.onSet("ListEntries", name, func(s *fakeSet) error {
		restart()
		for e := range s.entries {
			each(e)
		}
		f.dumped += len(s.entries)
		return nil
	})
}

func checkEntry(s Set, e SetEntry) error {
	switch s.Type {
	case BitmapPort:
		if e.IP.IsValid() {
			return fmt.Errorf("set %s: entry %s: syntax error", s.Name, e)
		}
		return nil
	case HashIP:
		if e.Protocol != 0 {
			return fmt.Errorf("set %s: entry %s: syntax error", s.Name, e)
		}
	}
	if !e.IP.IsValid() || FamilyOf(e.IP) != s.Family {
		return fmt.Errorf("set %s: entry %s: address family mismatch", s.Name, e)
	}
	if e.IP2.IsValid() && FamilyOf(e.IP2) != s.Family || e.Net.IsValid() && FamilyOf(e.Net.Addr()) != s.Family {
		return fmt.Errorf("set %s: entry %s: address family mismatch", s.Name, e)
	}
	return nil
}

// AddEntry implements Sets.
func (f *Fake) AddEntry(name string, e SetEntry) error {
	return f.onSet("AddEntry", name, func(s *fakeSet) error {
		if err := checkEntry(s.set, e); err != nil {
			return err
		}
		if _, ok := s.entries[e]; ok {
			return fmt.Errorf("set %s: entry %s: %w", name, e, ErrExist)
		}
		if s.set.MaxElem > 0 && uint32(len(s.entries)) >= s.set.MaxElem {
			return fmt.Errorf("set %s: hash is full", name)
		}
		s.entries[e] = struct{}{}
		return nil
	})
}

// DelEntry implements Sets.
func (f *Fake) DelEntry(name string, e SetEntry) error {
	return f.onSet("DelEntry", name, func(s *fakeSet) error {
		if _, ok := s.entries[e]; !ok {
			return fmt.Errorf("set %s: entry %s: %w", name, e, ErrNotFound)
		}
		delete(s.entries, e)
		return nil
	})
}

// WriteAddresses implements Addresses, one op at a time (counted as the single ops).
func (f *Fake) WriteAddresses(dev string, ops []AddressOp) []error {
	return eachOp(ops, func(op AddressOp) error {
		if op.Unbind {
			return absentOK(f.UnbindAddress(dev, op.Addr), f.locked(func() bool { _, ok := f.links[dev]; return ok }))
		}
		return existOK(f.BindAddress(dev, op.Addr))
	})
}

// WriteVirtualServers implements IPVS, one op at a time (counted as the single ops).
func (f *Fake) WriteVirtualServers(ops []VirtualServerOp) []error {
	return eachOp(ops, func(op VirtualServerOp) error {
		switch op.Kind {
		case OpAdd:
			return f.AddVirtualServer(op.VS)
		case OpUpdate:
			return f.UpdateVirtualServer(op.VS)
		case OpDelete:
			return absentOK(f.DeleteVirtualServer(op.VS.VSKey), true)
		}
		return nil
	})
}

// WriteRealServers implements IPVS, one op at a time (counted as the single ops).
func (f *Fake) WriteRealServers(ops []RealServerOp) []error {
	return eachOp(ops, func(op RealServerOp) error {
		switch op.Kind {
		case OpAdd:
			if err := f.AddRealServer(op.VS, op.RS); !errors.Is(err, ErrExist) {
				return err
			}
			return f.UpdateRealServer(op.VS, op.RS)
		case OpUpdate:
			return f.UpdateRealServer(op.VS, op.RS)
		case OpDelete:
			return absentOK(f.DeleteRealServer(op.VS, op.RS), f.locked(func() bool { _, ok := f.vs[op.VS]; return ok }))
		}
		return nil
	})
}

// WriteEntries implements Sets, one op at a time (counted as AddEntry and DelEntry).
func (f *Fake) WriteEntries(ops []SetOp) []error {
	return eachOp(ops, func(op SetOp) error {
		if op.Delete {
			return absentOK(f.DelEntry(op.Set, op.Entry), f.locked(func() bool { _, ok := f.sets[op.Set]; return ok }))
		}
		return existOK(f.AddEntry(op.Set, op.Entry))
	})
}

// eachOp applies ops one at a time and returns one error per op, as the batch writes do.
func eachOp[T any](ops []T, apply func(T) error) []error {
	errs := make([]error, len(ops))
	for i, op := range ops {
		errs[i] = apply(op)
	}
	return errs
}

// existOK is err, except that adding what exists succeeds: the kernel backends' batch
// adds do not set NLM_F_EXCL.
func existOK(err error) error {
	if errors.Is(err, ErrExist) {
		return nil
	}
	return err
}

// absentOK is err, except that deleting what is gone succeeds while its container (the
// device, virtual server or set) exists; a missing container stays an error, as in the
// kernel.
func absentOK(err error, container bool) error {
	if container && errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// locked runs check under f's lock: a look into its tables from outside one of its
// operations.
func (f *Fake) locked(check func() bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return check()
}

// Restore implements Rules: the fake holds the ruleset, printed in its backend's
// language for Save and Dump.
func (f *Fake) Restore(fam Family, rules *Ruleset) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count("Restore")
	f.rules[fam], f.ruleset[fam] = rules.String(), rules
	return nil
}

// RestoreText replaces the family's rules with text, as another program's restore would:
// rules a test puts in place behind the syncer's back.
func (f *Fake) RestoreText(fam Family, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count("Restore")
	f.rules[fam] = text
	delete(f.ruleset, fam)
}

// Ruleset returns the ruleset the family's last Restore wrote, or nil when its rules
// came from RestoreText or Load.
func (f *Fake) Ruleset(fam Family) *Ruleset {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ruleset[fam]
}

// Save implements Rules.
func (f *Fake) Save(fam Family) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count("Save")
	return f.rules[fam], nil
}

// AddFlow records a conntrack flow, so tests can check what ClearUDP removes.
func (f *Fake) AddFlow(origDst, replySrc netip.AddrPort) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flows[fakeFlow{origDst, replySrc}] = struct{}{}
}

// Flows returns the recorded flows as "origDst>replySrc" strings, sorted.
func (f *Fake) Flows() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for fl := range f.flows {
		out = append(out, fl.origDst.String()+">"+fl.replySrc.String())
	}
	slices.Sort(out)
	return out
}

// ClearUDP implements Conntrack.
func (f *Fake) ClearUDP(vip, endpoint netip.AddrPort) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count("ClearUDP")
	for fl := range f.flows {
		if fl.origDst == vip && (!endpoint.IsValid() || fl.replySrc == endpoint) {
			delete(f.flows, fl)
		}
	}
	return nil
}

// ReconcileUDP implements Conntrack over the recorded flows of family f.
func (f *Fake) ReconcileUDP(fam Family, stale func(orig, reply netip.AddrPort) bool) (int, error) {
	f.mu.Lock()
	f.count("ReconcileUDP")
	var flows []fakeFlow
	for fl := range f.flows {
		if FamilyOf(fl.origDst.Addr()) == fam {
			flows = append(flows, fl)
		}
	}
	f.mu.Unlock()
	n := 0
	for _, fl := range flows {
		if stale(fl.origDst, fl.replySrc) {
			f.mu.Lock()
			delete(f.flows, fl)
			f.count("DeleteFlow") // the reconcile's writes, apart from its read
			f.mu.Unlock()
			n++
		}
	}
	return n, nil
}

// SetStats sets what Stats returns.
func (f *Fake) SetStats(s ConntrackStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats = s
}

// Stats implements Conntrack.
func (f *Fake) Stats() (ConntrackStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count("Stats")
	return f.stats, nil
}

// Dump prints the whole fake kernel deterministically: the IPVS table as `ipvsadm -Ln`,
// the addresses of every link, the sets as `ipset save`, and the iptables rules.
func (f *Fake) Dump() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	vss := make([]VirtualServer, 0, len(f.vs))
	rss := map[VSKey][]RealServer{}
	for k, v := range f.vs {
		vss = append(vss, v.vs)
		rss[k] = slices.Collect(maps.Values(v.rss))
	}
	b.WriteString(FormatIPVS(vss, rss))
	for _, dev := range slices.Sorted(maps.Keys(f.links)) {
		b.WriteString("\n# addresses on " + dev + "\n")
		b.WriteString(FormatAddresses(dev, slices.Collect(maps.Keys(f.links[dev]))))
	}
	b.WriteString("\n# ipset save\n")
	var sets []Set
	members := map[string][]SetEntry{}
	for _, name := range slices.Sorted(maps.Keys(f.sets)) {
		sets = append(sets, f.sets[name].set)
		members[name] = slices.Collect(maps.Keys(f.sets[name].entries))
	}
	b.WriteString(FormatSets(sets, members))
	for _, fam := range []Family{IPv4, IPv6} {
		if r := f.rules[fam]; r != "" {
			b.WriteString("\n# " + fam.String() + " iptables-save\n" + r)
		}
	}
	return b.String()
}

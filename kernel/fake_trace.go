package kernel

import (
	"fmt"
	"net/netip"
	"slices"
)

// Trace runs p through what the fake holds for p's family: the ruleset the last Restore
// wrote, the sets' members and the IPVS table, with the addresses bound on its links
// and nodeIPs as the node's own (kernel.Packet's hooks: trace.go).
func (f *Fake) Trace(p Packet, nodeIPs []netip.Addr) (Verdict, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fam := FamilyOf(p.Dst)
	rules := f.ruleset[fam]
	if rules == nil {
		return Verdict{}, fmt.Errorf("trace: no %s ruleset was restored", fam)
	}
	st := &traceState{rules: rules, vs: map[VSKey][]string{}, local: map[netip.Addr]bool{}}
	for k, v := range f.vs {
		var rss []string
		for _, rs := range v.rss {
			if rs.Weight > 0 {
				rss = append(rss, netip.AddrPortFrom(rs.Address, rs.Port).String())
			}
		}
		slices.Sort(rss)
		st.vs[k] = rss
	}
	for _, l := range f.links {
		for a := range l {
			st.local[a] = true
		}
	}
	for _, a := range nodeIPs {
		st.local[a] = true
	}
	st.in = func(set string, key []Field, src, dst netip.Addr, proto Protocol, port uint16) bool {
		s := f.sets[set]
		if s == nil {
			return false
		}
		return s.holds(key, src, dst, proto, port)
	}
	return st.trace(p), nil
}

// holds is ipset's (and nft's) test of a packet against the set's members. key names the
// packet's field for each of the set type's dimensions: the port (bitmap:port), or an
// address, then for hash:ip,port* the protocol and the port, then the second address or
// net. A key that does not fit the type holds nothing.
func (s *fakeSet) holds(key []Field, src, dst netip.Addr, proto Protocol, port uint16) bool {
	dims := map[SetType]int{BitmapPort: 1, HashIP: 1, HashIPPort: 3, HashIPPortIP: 4, HashIPPortNet: 4}[s.set.Type]
	if len(key) != dims {
		return false
	}
	addr := func(f Field) netip.Addr {
		if f == SrcAddr {
			return src
		}
		return dst
	}
	for e := range s.entries {
		var hit bool
		switch s.set.Type {
		case BitmapPort:
			hit = e.Port == port
		case HashIP:
			hit = e.IP == addr(key[0])
		case HashIPPort:
			hit = e.IP == addr(key[0]) && e.Protocol == proto && e.Port == port
		case HashIPPortIP:
			hit = e.IP == addr(key[0]) && e.Protocol == proto && e.Port == port && e.IP2 == addr(key[3])
		case HashIPPortNet:
			hit = e.IP == addr(key[0]) && e.Protocol == proto && e.Port == port && e.Net.Contains(addr(key[3]))
		}
		if hit {
			return true
		}
	}
	return false
}

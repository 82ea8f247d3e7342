package kernel

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Load replaces the fake's IPVS table, device addresses, sets and rules with those of
// text, in the format Dump prints, so that a test's "before" state is text too:
// Load(Dump()) gives back the same Dump. Connection counts on the real-server lines are
// loaded; operation counts, flows and traffic counters are left as they are.
func (f *Fake) Load(text string) error {
	n := NewFake()
	section, dev, fam := "ipvs", "", Family(0)
	var last *fakeVS
	for i, line := range strings.Split(text, "\n") {
		var err error
		switch {
		case section == "rules" && !strings.HasPrefix(line, "# "):
			if line != "" { // Dump separates its sections with a blank line
				n.rules[fam] += line + "\n"
			}
			continue
		case strings.HasPrefix(line, "# addresses on "):
			section, dev = "addrs", strings.TrimPrefix(line, "# addresses on ")
			n.links[dev] = map[netip.Addr]struct{}{}
			continue
		case line == "# ipset save":
			section = "sets"
			continue
		case strings.HasSuffix(line, " iptables-save") && strings.HasPrefix(line, "# IPv"):
			section, fam = "rules", IPv4
			if strings.HasPrefix(line, "# IPv6") {
				fam = IPv6
			}
			continue
		case strings.TrimSpace(line) == "" || strings.HasPrefix(IPVSHeader, line+"\n") || strings.Contains(IPVSHeader, "\n"+line+"\n"):
			continue
		case section == "ipvs" && strings.HasPrefix(line, "  -> "):
			if last == nil {
				err = fmt.Errorf("a real server before any virtual server")
			} else {
				err = loadRealServer(last, line)
			}
		case section == "ipvs":
			last, err = n.loadVirtualServer(line)
		case section == "addrs":
			err = n.loadAddress(dev, line)
		case section == "sets":
			err = n.loadSetLine(line)
		}
		if err != nil {
			return fmt.Errorf("line %d %q: %w", i+1, line, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.vs, f.links, f.sets, f.rules = n.vs, n.links, n.sets, n.rules
	clear(f.ruleset)
	return nil
}

// loadVirtualServer parses a service line of FormatVirtualServer.
func (f *Fake) loadVirtualServer(line string) (*fakeVS, error) {
	w := strings.Fields(line)
	if len(w) < 3 {
		return nil, fmt.Errorf("want PROTO ADDR:PORT SCHEDULER")
	}
	proto := map[string]Protocol{"TCP": TCP, "UDP": UDP, "SCTP": SCTP}[w[0]]
	ap, err := netip.ParseAddrPort(w[1])
	if err != nil || proto == 0 {
		return nil, fmt.Errorf("protocol or address: %v", err)
	}
	settings, err := parseSettings(w[2:])
	if err != nil {
		return nil, err
	}
	vs := VirtualServer{VSKey: VSKey{Protocol: proto, Address: ap.Addr(), Port: ap.Port()}, VSSettings: settings}
	v := &fakeVS{vs: vs, rss: map[netip.AddrPort]RealServer{}}
	f.vs[vs.VSKey] = v
	return v, nil
}

// loadRealServer parses a destination line of FormatRealServer.
func loadRealServer(v *fakeVS, line string) error {
	w := strings.Fields(strings.TrimPrefix(line, "  -> "))
	if len(w) != 5 || w[1] != "Masq" {
		return fmt.Errorf("want ADDR:PORT Masq WEIGHT ACTIVE INACTIVE")
	}
	ap, err := netip.ParseAddrPort(w[0])
	if err != nil {
		return err
	}
	var n [3]int32
	for i, s := range w[2:] {
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return err
		}
		n[i] = int32(v)
	}
	v.rss[ap] = RealServer{Address: ap.Addr(), Port: ap.Port(), Weight: n[0], ActiveConns: n[1], InactiveConns: n[2]}
	return nil
}

// loadAddress parses a line of FormatAddresses.
func (f *Fake) loadAddress(dev, line string) error {
	w := strings.Fields(line)
	if len(w) < 2 {
		return fmt.Errorf("want inet ADDR/BITS")
	}
	p, err := netip.ParsePrefix(w[1])
	if err != nil {
		return err
	}
	f.links[dev][p.Addr()] = struct{}{}
	return nil
}

// loadSetLine parses a create or add line of FormatSets.
func (f *Fake) loadSetLine(line string) error {
	w := strings.Fields(line)
	if len(w) < 3 {
		return fmt.Errorf("want a create or add line")
	}
	switch w[0] {
	case "create":
		s := Set{Name: w[1], Type: SetType(w[2]), Family: IPv4}
		for i := 3; i+1 < len(w); i += 2 {
			switch w[i] {
			case "family":
				if w[i+1] == "inet6" {
					s.Family = IPv6
				}
			case "hashsize", "maxelem":
				v, err := strconv.ParseUint(w[i+1], 10, 32)
				if err != nil {
					return err
				}
				if w[i] == "hashsize" {
					s.HashSize = uint32(v)
				} else {
					s.MaxElem = uint32(v)
				}
			}
		}
		f.sets[s.Name] = &fakeSet{set: s, entries: map[SetEntry]struct{}{}}
	case "add":
		s, ok := f.sets[w[1]]
		if !ok {
			return fmt.Errorf("set %s not created", w[1])
		}
		e, err := ParseSetEntry(s.set.Type, w[2])
		if err != nil {
			return err
		}
		s.entries[e] = struct{}{}
	default:
		return fmt.Errorf("unknown %q", w[0])
	}
	return nil
}

// ParseSetEntry parses an entry as SetEntry.String prints it for a set of type t.
func ParseSetEntry(t SetType, s string) (SetEntry, error) {
	if t == BitmapPort {
		p, err := strconv.ParseUint(s, 10, 16)
		return SetEntry{Port: uint16(p)}, err
	}
	parts := strings.Split(s, ",")
	var e SetEntry
	var err error
	if e.IP, err = netip.ParseAddr(parts[0]); err != nil {
		return e, err
	}
	if t == HashIP {
		return e, nil
	}
	if len(parts) < 2 {
		return e, fmt.Errorf("%q: want IP,PROTO:PORT", s)
	}
	proto, port, _ := strings.Cut(parts[1], ":")
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return e, err
	}
	e.Protocol, e.Port = map[string]Protocol{"tcp": TCP, "udp": UDP, "sctp": SCTP}[proto], uint16(p)
	if e.Protocol == 0 {
		return e, fmt.Errorf("%q: protocol", s)
	}
	switch {
	case t == HashIPPortIP && len(parts) == 3:
		e.IP2, err = netip.ParseAddr(parts[2])
	case t == HashIPPortNet && len(parts) == 3 && !strings.Contains(parts[2], "/"):
		var a netip.Addr // `ipset save` prints a one-address net without its length
		if a, err = netip.ParseAddr(parts[2]); err == nil {
			e.Net = netip.PrefixFrom(a, a.BitLen())
		}
	case t == HashIPPortNet && len(parts) == 3:
		e.Net, err = netip.ParsePrefix(parts[2])
	case len(parts) != 2:
		err = fmt.Errorf("%q: too many parts for %s", s, t)
	}
	return e, err
}

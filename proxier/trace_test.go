package proxier

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// The tracer runs a packet through what the node would hold for a set of Services: the
// iptables rules RenderRules writes, interpreted rule by rule, the set members and the
// IPVS table of the desired state. It models the hooks an IPVS service packet meets, as
// kube-proxy's IPVS mode relies on them: nat PREROUTING (or OUTPUT for the node's own
// traffic), the routing decision (a VIP bound on the dummy is local), filter INPUT (or
// FORWARD for a packet routed on; OUTPUT first for the node's own), then IPVS at
// LOCAL_IN, then nat POSTROUTING towards the real server. Connections are new
// (ctstate NEW) and never arrive on a bridge port. kube-proxy's nftables tests trace
// packets the same way through knftables's fake (pkg/proxy/nftables/helpers_test.go).

// packet is a new connection's first packet.
type packet struct {
	src, dst netip.Addr
	proto    kernel.Protocol
	port     uint16
	// in is the interface it arrives on; "" for the node's own traffic.
	in string
}

// verdict is what becomes of a packet.
type verdict struct {
	// outcome: "ipvs" (forwarded to real servers), "host" (a local listener),
	// "forward" (routed on, not a service), "reject" or "drop".
	outcome string
	rss     []string // ipvs: the real servers it may go to, "ip:port", sorted
	masq    bool     // ipvs: source NAT on the way to the real server
}

func (v verdict) String() string {
	s := v.outcome
	if v.outcome == "ipvs" {
		s += " " + strings.Join(v.rss, ",")
		if v.masq {
			s += " masq"
		}
	}
	return s
}

// world is a node's state for one family.
type world struct {
	f      kernel.Family
	chains map[string][][]string // table/chain -> rules (tokens after "-A CHAIN")
	sets   map[string]map[kernel.SetEntry]bool
	types  map[string]kernel.SetType
	vs     map[kernel.VSKey][]string
	local  map[netip.Addr]bool // addresses of the node: node IPs and bound VIPs
}

// newWorld translates the Services with their slices (by Service name) and renders the
// node's state for family f.
func newWorld(t *testing.T, cfg *Config, f kernel.Family, svcs []*v1.Service, eps map[string][]*discovery.EndpointSlice) *world {
	t.Helper()
	d := NewDesired()
	for _, s := range svcs {
		d.Set(translate(cfg, s, eps[s.Name]...), nil)
	}
	w := &world{f: f, chains: map[string][][]string{}, sets: map[string]map[kernel.SetEntry]bool{},
		types: map[string]kernel.SetType{}, vs: map[kernel.VSKey][]string{}, local: map[netip.Addr]bool{}}
	for _, s := range Sets([]kernel.Family{f}) {
		w.types[s.Name] = s.Type
		w.sets[s.Name] = map[kernel.SetEntry]bool{}
	}
	for _, m := range d.Members() {
		if w.sets[m.Set] != nil {
			w.sets[m.Set][m.Entry] = true
		}
	}
	for _, k := range d.VirtualServerKeys() {
		if kernel.FamilyOf(k.Address) != f {
			continue
		}
		vs, _, _ := d.VirtualServer(k)
		var rss []string
		for r := range vs.RealServers.All() {
			if r.Weight > 0 {
				rss = append(rss, r.AddrPort().String())
			}
		}
		slices.Sort(rss)
		w.vs[k] = rss
	}
	for _, a := range append(d.Addresses(), cfg.NodeIPs...) {
		w.local[a] = true
	}
	table := ""
	for _, line := range strings.Split(RenderRules(cfg, f, d.OutFilters()), "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, "-A "):
			tok := tokenize(line)
			w.chains[table+"/"+tok[1]] = append(w.chains[table+"/"+tok[1]], tok[2:])
		}
	}
	return w
}

// tokenize splits a rule, keeping quoted strings whole.
func tokenize(line string) []string {
	var out []string
	for len(line) > 0 {
		line = strings.TrimLeft(line, " ")
		if line == "" {
			break
		}
		if line[0] == '"' {
			end := strings.IndexByte(line[1:], '"') + 1
			out, line = append(out, line[1:end]), line[end+1:]
			continue
		}
		i := strings.IndexByte(line, ' ')
		if i < 0 {
			i = len(line)
		}
		out, line = append(out, line[:i]), line[i:]
	}
	return out
}

// state is a packet on its way: the mark and the masquerade decision.
type state struct {
	p    packet
	mark uint32
	masq bool
	// dst and port are rewritten by IPVS before POSTROUTING.
	dst  netip.Addr
	port uint16
}

// trace runs p through the node.
func (w *world) trace(t *testing.T, p packet) verdict {
	t.Helper()
	st := &state{p: p, dst: p.dst, port: p.port}
	own := p.in == ""
	if own {
		if v := w.run(t, st, "nat/OUTPUT"); v != "" {
			return verdict{outcome: v}
		}
		if v := w.run(t, st, "filter/OUTPUT"); v != "" {
			return verdict{outcome: v}
		}
	} else if v := w.run(t, st, "nat/PREROUTING"); v != "" {
		return verdict{outcome: v}
	}
	if !w.local[p.dst] {
		if v := w.run(t, st, "filter/FORWARD"); v != "" {
			return verdict{outcome: v}
		}
		return verdict{outcome: "forward"}
	}
	if v := w.run(t, st, "filter/INPUT"); v != "" {
		return verdict{outcome: v}
	}
	rss, ok := w.vs[kernel.VSKey{Protocol: p.proto, Address: p.dst, Port: p.port}]
	if !ok {
		return verdict{outcome: "host"}
	}
	if len(rss) == 0 {
		return verdict{outcome: "drop"} // a virtual server with no real server: the SYN is lost
	}
	// POSTROUTING sees the packet addressed to the real server (the first, for hairpin).
	rs := netip.MustParseAddrPort(rss[0])
	st.dst, st.port = rs.Addr(), rs.Port()
	if v := w.run(t, st, "nat/POSTROUTING"); v != "" {
		return verdict{outcome: v}
	}
	return verdict{outcome: "ipvs", rss: rss, masq: st.masq}
}

// run evaluates a chain; it returns "" when the packet goes on (the chain ran out, or
// RETURN), else the terminal target's outcome ("accept" ends the table: it goes on to
// the next hook, so callers treat it as "").
func (w *world) run(t *testing.T, st *state, chain string) string {
	t.Helper()
	v := w.runChain(t, st, chain, 0)
	if v == "accept" || v == "return" {
		return ""
	}
	return v
}

func (w *world) runChain(t *testing.T, st *state, chain string, depth int) string {
	t.Helper()
	if depth > 8 {
		t.Fatalf("chain loop at %s", chain)
	}
	table := strings.SplitN(chain, "/", 2)[0]
	for _, rule := range w.chains[chain] {
		target, ok := w.matches(t, st, rule)
		if !ok {
			continue
		}
		switch target[0] {
		case "RETURN":
			return ""
		case "ACCEPT":
			return "accept"
		case "DROP":
			return "drop"
		case "REJECT":
			return "reject"
		case "MASQUERADE":
			st.masq = true
			return "accept"
		case "MARK":
			v, err := strconv.ParseUint(target[2], 0, 32)
			if err != nil {
				t.Fatalf("mark %q", target)
			}
			switch target[1] {
			case "--or-mark":
				st.mark |= uint32(v)
			case "--xor-mark":
				st.mark ^= uint32(v)
			default:
				t.Fatalf("MARK %q", target)
			}
		default:
			if v := w.runChain(t, st, table+"/"+target[0], depth+1); v != "" {
				return v
			}
		}
	}
	return ""
}

// matches evaluates a rule's matches and returns its target (with its options).
func (w *world) matches(t *testing.T, st *state, tok []string) ([]string, bool) {
	t.Helper()
	p := st.p
	for i := 0; i < len(tok); i++ {
		neg := false
		if tok[i] == "!" {
			neg, i = true, i+1
		}
		var ok bool
		switch tok[i] {
		case "-j":
			return tok[i+1:], true
		case "-m":
			switch tok[i+1] {
			case "comment":
				i += 3 // --comment X
				continue
			case "conntrack": // --ctstate LIST: every traced packet is NEW
				if tok[i+2] != "--ctstate" {
					t.Fatalf("conntrack %q", tok[i+2])
				}
				if !slices.Contains(strings.Split(tok[i+3], ","), "NEW") {
					return nil, false
				}
				i += 3
				continue
			case "physdev":
				i += 3 // ! --physdev-is-in: never from a bridge port
				continue
			case "set", "mark", "addrtype", "ipvs":
				i++
				continue
			}
			t.Fatalf("unknown match %q", tok[i+1])
		case "-s", "-d":
			pfx, err := netip.ParsePrefix(tok[i+1])
			if err != nil {
				a := netip.MustParseAddr(tok[i+1])
				pfx = netip.PrefixFrom(a, a.BitLen())
			}
			addr := p.src
			if tok[i] == "-d" {
				addr = st.dst
			}
			ok, i = pfx.Contains(addr), i+1
		case "-p":
			ok, i = strings.EqualFold(tok[i+1], p.proto.Lower()), i+1
		case "-i":
			name := tok[i+1]
			ok, i = p.in != "" && (name == p.in || strings.HasSuffix(name, "+") && strings.HasPrefix(p.in, strings.TrimSuffix(name, "+"))), i+1
		case "--match-set":
			ok, i = w.inSet(t, st, tok[i+1], tok[i+2]), i+2
		case "--mark":
			vm := strings.SplitN(tok[i+1], "/", 2)
			v, _ := strconv.ParseUint(vm[0], 0, 32)
			m, _ := strconv.ParseUint(vm[1], 0, 32)
			ok, i = st.mark&uint32(m) == uint32(v), i+1
		case "--src-type", "--dst-type":
			if tok[i+1] != "LOCAL" {
				t.Fatalf("addrtype %q", tok[i+1])
			}
			if tok[i] == "--src-type" {
				ok = p.in == "" || w.local[p.src]
			} else {
				ok = w.local[st.dst]
			}
			i++
		case "--vaddr":
			// -m ipvs --vaddr A --vproto P --vport N: the node's own packet to that VS.
			port, _ := strconv.Atoi(tok[i+5])
			ok, i = p.in == "" && p.dst == netip.MustParseAddr(tok[i+1]) && strings.EqualFold(tok[i+3], p.proto.Lower()) && uint16(port) == p.port, i+5
		default:
			t.Fatalf("unknown rule token %q in %q", tok[i], tok)
		}
		if ok == neg {
			return nil, false
		}
	}
	return nil, false
}

// inSet is ipset's test of the packet against set with the directions in flags
// ("dst", "dst,dst", "src,dst", "dst,dst,src").
func (w *world) inSet(t *testing.T, st *state, set, flags string) bool {
	t.Helper()
	members, ok := w.sets[set]
	if !ok {
		t.Fatalf("no set %s", set)
	}
	dirs := strings.Split(flags, ",")
	addr := func(d string) netip.Addr {
		if d == "src" {
			return st.p.src
		}
		return st.dst
	}
	for e := range members {
		var hit bool
		switch w.types[set] {
		case kernel.BitmapPort:
			hit = dirs[0] == "dst" && e.Port == st.port
		case kernel.HashIP:
			hit = e.IP == addr(dirs[0])
		case kernel.HashIPPort:
			hit = e.IP == addr(dirs[0]) && e.Protocol == st.p.proto && e.Port == st.port
		case kernel.HashIPPortIP:
			hit = e.IP == addr(dirs[0]) && e.Protocol == st.p.proto && e.Port == st.port && e.IP2 == addr(dirs[2])
		case kernel.HashIPPortNet:
			hit = e.IP == addr(dirs[0]) && e.Protocol == st.p.proto && e.Port == st.port && e.Net.Contains(addr(dirs[2]))
		default:
			t.Fatalf("set type %s", w.types[set])
		}
		if hit {
			return true
		}
	}
	return false
}

// pkt builds a TCP packet "SRC -> DST:PORT" arriving on in ("" for the node's own).
func pkt(src, dst string, port uint16, in string) packet {
	return packet{src: netip.MustParseAddr(src), dst: netip.MustParseAddr(dst), proto: kernel.TCP, port: port, in: in}
}

func (p packet) String() string {
	from := p.in
	if from == "" {
		from = "node"
	}
	return fmt.Sprintf("%s %s -> %s:%d via %s", p.proto, p.src, p.dst, p.port, from)
}

package linux

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// parseNftTable reads the text proxier.RenderNftRules writes (`nft list table` syntax, our
// chains only) and compiles it for family fam. It accepts exactly the statements that
// renderer uses; anything else is an error, never a rule that does something else.
func parseNftTable(fam nftables.TableFamily, text string) ([]nftChain, error) {
	var chains []nftChain
	var cur *nftChain
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line == "}" || strings.HasPrefix(line, "table "):
			if line == "}" && cur != nil {
				chains = append(chains, *cur)
				cur = nil
			}
		case strings.HasPrefix(line, "chain "):
			if cur != nil {
				return nil, fmt.Errorf("line %d: chain inside chain %s", n+1, cur.name)
			}
			cur = &nftChain{name: strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, "chain ")), " {")}
		case cur == nil:
			return nil, fmt.Errorf("line %d: %q outside a chain", n+1, line)
		case strings.HasPrefix(line, "type "):
			if err := cur.parseHook(line); err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
		default:
			r, err := compileNftRule(fam, line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q: %w", n+1, line, err)
			}
			cur.rules = append(cur.rules, r)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("chain %s not closed", cur.name)
	}
	return chains, nil
}

// nftHooks and nftPriorities are the hook and priority words a base chain line uses.
var (
	nftHookWords = map[string]*nftables.ChainHook{
		"prerouting": nftables.ChainHookPrerouting, "input": nftables.ChainHookInput,
		"forward": nftables.ChainHookForward, "output": nftables.ChainHookOutput,
		"postrouting": nftables.ChainHookPostrouting,
	}
	nftPriorities = map[string]int32{"mangle": -150, "dstnat": -100, "filter": 0, "srcnat": 100}
)

// parseHook reads "type T hook H priority P; policy accept;".
func (c *nftChain) parseHook(line string) error {
	f := strings.Fields(strings.NewReplacer(";", " ").Replace(line))
	if len(f) != 8 || f[2] != "hook" || f[4] != "priority" || f[6] != "policy" || f[7] != "accept" {
		return fmt.Errorf("base chain line %q", line)
	}
	switch f[1] {
	case "nat":
		c.typ = nftables.ChainTypeNAT
	case "filter":
		c.typ = nftables.ChainTypeFilter
	default:
		return fmt.Errorf("chain type %q", f[1])
	}
	if c.hook = nftHookWords[f[3]]; c.hook == nil {
		return fmt.Errorf("hook %q", f[3])
	}
	p, ok := nftPriorities[f[5]]
	if !ok {
		n, err := strconv.ParseInt(f[5], 10, 32)
		if err != nil {
			return fmt.Errorf("priority %q", f[5])
		}
		p = int32(n)
	}
	c.priority = nftables.ChainPriorityRef(nftables.ChainPriority(p))
	return nil
}

// nftCompiler turns one rule's tokens into expressions.
type nftCompiler struct {
	fam   nftables.TableFamily
	toks  []string
	exprs []expr.Any
	rule  nftRule
}

// compileNftRule compiles one rule line.
func compileNftRule(fam nftables.TableFamily, line string) (nftRule, error) {
	toks, err := nftTokens(line)
	if err != nil {
		return nftRule{}, err
	}
	c := &nftCompiler{fam: fam, toks: toks}
	for len(c.toks) > 0 {
		if err := c.statement(); err != nil {
			return nftRule{}, err
		}
	}
	c.rule.exprs = c.exprs
	return c.rule, nil
}

// nftTokens splits a line at spaces, keeping a double-quoted string (unquoted) as one
// token prefixed with a quote mark so it cannot be taken for a keyword.
func nftTokens(line string) ([]string, error) {
	var out []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '"' {
			end := strings.IndexByte(line[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("unterminated string")
			}
			out = append(out, "\""+line[1:1+end])
			line = line[2+end:]
			continue
		}
		end := strings.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		out = append(out, line[:end])
		line = line[end:]
	}
	return out, nil
}

// next takes n tokens.
func (c *nftCompiler) next(n int) ([]string, error) {
	if len(c.toks) < n {
		return nil, fmt.Errorf("rule ends early")
	}
	t := c.toks[:n]
	c.toks = c.toks[n:]
	return t, nil
}

// peek is the next token, or "".
func (c *nftCompiler) peek() string {
	if len(c.toks) == 0 {
		return ""
	}
	return c.toks[0]
}

// add appends expressions.
func (c *nftCompiler) add(e ...expr.Any) { c.exprs = append(c.exprs, e...) }

// statement compiles the statement at the head of the tokens.
func (c *nftCompiler) statement() error {
	switch t := c.peek(); t {
	case "accept", "drop", "return":
		c.toks = c.toks[1:]
		c.add(&expr.Verdict{Kind: map[string]expr.VerdictKind{"accept": expr.VerdictAccept, "drop": expr.VerdictDrop, "return": expr.VerdictReturn}[t]})
	case "jump":
		f, err := c.next(2)
		if err != nil {
			return err
		}
		c.add(&expr.Verdict{Kind: expr.VerdictJump, Chain: f[1]})
	case "reject":
		c.toks = c.toks[1:]
		// nft's plain `reject`: ICMP port unreachable, as iptables' REJECT default.
		code := uint8(3) // ICMP_PORT_UNREACH
		if c.fam == nftables.TableFamilyIPv6 {
			code = 4 // ICMPV6_PORT_UNREACH
		}
		c.add(&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: code})
	case "masquerade":
		c.toks = c.toks[1:]
		m := &expr.Masq{}
		if c.peek() == "fully-random" {
			c.toks, m.FullyRandom = c.toks[1:], true
		}
		c.add(m)
	case "comment":
		f, err := c.next(2)
		if err != nil || !strings.HasPrefix(f[1], "\"") {
			return fmt.Errorf("comment needs a quoted string")
		}
		c.rule.comment = f[1][1:]
	case "ct":
		return c.ctState()
	case "fib":
		return c.fib()
	case "meta":
		if len(c.toks) > 1 && c.toks[1] == "mark" {
			return c.mark()
		}
		return c.match()
	case "iifname":
		return c.iifname()
	case "tcp", "udp", "sctp":
		return c.protoPort()
	default:
		return c.match()
	}
	return nil
}

// nftField is one field a key can load.
type nftField struct {
	load func(reg uint32) expr.Any
	len  uint32
}

// field reads a field name at the head of the tokens.
func (c *nftCompiler) field() (nftField, error) {
	f, err := c.next(2)
	if err != nil {
		return nftField{}, err
	}
	addr := func(off, n uint32) nftField {
		return nftField{len: n, load: func(reg uint32) expr.Any {
			return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n}
		}}
	}
	switch f[0] + " " + f[1] {
	case "ip saddr":
		return addr(12, 4), nil
	case "ip daddr":
		return addr(16, 4), nil
	case "ip6 saddr":
		return addr(8, 16), nil
	case "ip6 daddr":
		return addr(24, 16), nil
	case "meta l4proto":
		return nftField{len: 1, load: func(reg uint32) expr.Any { return &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg} }}, nil
	case "th dport":
		return nftField{len: 2, load: func(reg uint32) expr.Any {
			return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: reg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}
		}}, nil
	}
	return nftField{}, fmt.Errorf("unknown field %q", f[0]+" "+f[1])
}

// match compiles "FIELD [. FIELD ...] [!=] @set" or "FIELD [!=] ADDRESS[/LEN]".
func (c *nftCompiler) match() error {
	var fields []nftField
	for {
		f, err := c.field()
		if err != nil {
			return err
		}
		fields = append(fields, f)
		if c.peek() != "." {
			break
		}
		c.toks = c.toks[1:]
	}
	invert := false
	if c.peek() == "!=" {
		c.toks, invert = c.toks[1:], true
	}
	v, err := c.next(1)
	if err != nil {
		return err
	}
	if strings.HasPrefix(v[0], "@") {
		reg := uint32(nftReg1)
		if len(fields) > 1 {
			reg = nftReg3200
			r := reg
			for _, f := range fields {
				c.add(f.load(r))
				r += (f.len + 3) / 4
			}
		} else {
			c.add(fields[0].load(reg))
		}
		c.add(&expr.Lookup{SourceRegister: reg, SetName: v[0][1:], Invert: invert})
		return nil
	}
	if len(fields) != 1 {
		return fmt.Errorf("a concatenation needs a set")
	}
	return c.prefix(fields[0], v[0], invert)
}

// prefix compiles a comparison of an address field with an address or a prefix.
func (c *nftCompiler) prefix(f nftField, v string, invert bool) error {
	p, err := netip.ParsePrefix(v)
	if err != nil {
		a, err2 := netip.ParseAddr(v)
		if err2 != nil {
			return fmt.Errorf("address %q", v)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if uint32(p.Addr().BitLen()/8) != f.len {
		return fmt.Errorf("address %q: wrong family for the field", v)
	}
	op := expr.CmpOpEq
	if invert {
		op = expr.CmpOpNeq
	}
	c.add(f.load(nftReg1))
	if p.Bits() < p.Addr().BitLen() {
		mask := make([]byte, f.len)
		for i := 0; i < p.Bits(); i++ {
			mask[i/8] |= 0x80 >> (i % 8)
		}
		c.add(&expr.Bitwise{SourceRegister: nftReg1, DestRegister: nftReg1, Len: f.len, Mask: mask, Xor: make([]byte, f.len)})
	}
	c.add(&expr.Cmp{Op: op, Register: nftReg1, Data: p.Masked().Addr().AsSlice()})
	return nil
}

// protoPort compiles "tcp|udp|sctp dport N|@set".
func (c *nftCompiler) protoPort() error {
	f, err := c.next(3)
	if err != nil {
		return err
	}
	if f[1] != "dport" {
		return fmt.Errorf("%s %s", f[0], f[1])
	}
	proto := map[string]byte{"tcp": unix.IPPROTO_TCP, "udp": unix.IPPROTO_UDP, "sctp": unix.IPPROTO_SCTP}[f[0]]
	c.add(&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: nftReg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: nftReg1, Data: []byte{proto}},
		&expr.Payload{OperationType: expr.PayloadLoad, DestRegister: nftReg1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})
	if strings.HasPrefix(f[2], "@") {
		c.add(&expr.Lookup{SourceRegister: nftReg1, SetName: f[2][1:]})
		return nil
	}
	port, err := strconv.ParseUint(f[2], 10, 16)
	if err != nil {
		return fmt.Errorf("port %q", f[2])
	}
	c.add(&expr.Cmp{Op: expr.CmpOpEq, Register: nftReg1, Data: binary.BigEndian.AppendUint16(nil, uint16(port))})
	return nil
}

// ctState compiles "ct state new" and "ct state established,related".
func (c *nftCompiler) ctState() error {
	f, err := c.next(3)
	if err != nil {
		return err
	}
	if f[1] != "state" {
		return fmt.Errorf("ct %s", f[1])
	}
	var bits uint32
	for _, s := range strings.Split(f[2], ",") {
		b, ok := map[string]uint32{"new": expr.CtStateBitNEW, "established": expr.CtStateBitESTABLISHED, "related": expr.CtStateBitRELATED}[s]
		if !ok {
			return fmt.Errorf("ct state %q", s)
		}
		bits |= b
	}
	c.add(&expr.Ct{Register: nftReg1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: nftReg1, DestRegister: nftReg1, Len: 4, Mask: binary.NativeEndian.AppendUint32(nil, bits), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: nftReg1, Data: make([]byte, 4)})
	return nil
}

// fib compiles "fib saddr|daddr type [!=] local".
func (c *nftCompiler) fib() error {
	f, err := c.next(3)
	if err != nil {
		return err
	}
	if f[2] != "type" || (f[1] != "saddr" && f[1] != "daddr") {
		return fmt.Errorf("fib %s %s", f[1], f[2])
	}
	op := expr.CmpOpEq
	if c.peek() == "!=" {
		c.toks, op = c.toks[1:], expr.CmpOpNeq
	}
	if v, err := c.next(1); err != nil || v[0] != "local" {
		return fmt.Errorf("fib type: only local")
	}
	c.add(&expr.Fib{Register: nftReg1, ResultADDRTYPE: true, FlagSADDR: f[1] == "saddr", FlagDADDR: f[1] == "daddr"},
		&expr.Cmp{Op: op, Register: nftReg1, Data: binary.NativeEndian.AppendUint32(nil, unix.RTN_LOCAL)})
	return nil
}

// mark compiles "meta mark & M ==|!= V" and "meta mark set meta mark |/^ M".
func (c *nftCompiler) mark() error {
	f, err := c.next(5)
	if err != nil {
		return err
	}
	num := func(s string) ([]byte, error) {
		v, err := strconv.ParseUint(s, 0, 32)
		return binary.NativeEndian.AppendUint32(nil, uint32(v)), err
	}
	load := &expr.Meta{Key: expr.MetaKeyMARK, Register: nftReg1}
	switch {
	case f[2] == "&" && (f[4] == "==" || f[4] == "!="):
		m, err := num(f[3])
		if err != nil {
			return err
		}
		v, err := c.next(1)
		if err != nil {
			return err
		}
		want, err := num(v[0])
		if err != nil {
			return err
		}
		op := expr.CmpOpEq
		if f[4] == "!=" {
			op = expr.CmpOpNeq
		}
		c.add(load, &expr.Bitwise{SourceRegister: nftReg1, DestRegister: nftReg1, Len: 4, Mask: m, Xor: make([]byte, 4)},
			&expr.Cmp{Op: op, Register: nftReg1, Data: want})
	case f[2] == "set" && f[3] == "meta" && f[4] == "mark":
		g, err := c.next(2)
		if err != nil {
			return err
		}
		m, err := num(g[1])
		if err != nil {
			return err
		}
		var mask, xor []byte
		switch g[0] {
		case "|": // (mark & ~M) ^ M
			v := binary.NativeEndian.Uint32(m)
			mask, xor = binary.NativeEndian.AppendUint32(nil, ^v), m
		case "^":
			mask, xor = []byte{0xff, 0xff, 0xff, 0xff}, m
		default:
			return fmt.Errorf("meta mark set: operator %q", g[0])
		}
		c.add(load, &expr.Bitwise{SourceRegister: nftReg1, DestRegister: nftReg1, Len: 4, Mask: mask, Xor: xor},
			&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: nftReg1})
	default:
		return fmt.Errorf("meta mark %s", strings.Join(f[2:], " "))
	}
	return nil
}

// iifname compiles `iifname [!=] "name"` and a prefix `"name*"`.
func (c *nftCompiler) iifname() error {
	c.toks = c.toks[1:]
	op := expr.CmpOpEq
	if c.peek() == "!=" {
		c.toks, op = c.toks[1:], expr.CmpOpNeq
	}
	v, err := c.next(1)
	if err != nil || !strings.HasPrefix(v[0], "\"") {
		return fmt.Errorf("iifname needs a quoted name")
	}
	name := v[0][1:]
	data := []byte(strings.TrimSuffix(name, "*"))
	if !strings.HasSuffix(name, "*") {
		data = append(data, make([]byte, unix.IFNAMSIZ-len(data))...) // the whole name, NUL-padded
	}
	c.add(&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: nftReg1}, &expr.Cmp{Op: op, Register: nftReg1, Data: data})
	return nil
}

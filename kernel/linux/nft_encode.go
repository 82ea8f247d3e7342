package linux

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// nftChain is one chain of our table as netlink carries it: a base chain has a hook.
type nftChain struct {
	name     string
	typ      nftables.ChainType
	hook     *nftables.ChainHook
	priority *nftables.ChainPriority
	rules    []nftRule
}

// nftRule is one rule: its expressions and its comment (the rule's userdata, as nft
// stores a comment, so `nft list table` shows it).
type nftRule struct {
	exprs   []expr.Any
	comment string
}

// userData is a rule's userdata: its comment, as nft stores it.
func (r nftRule) userData() []byte {
	if r.comment == "" {
		return nil
	}
	return userdata.AppendString(nil, userdata.TypeComment, r.comment)
}

// Registers: a single value goes to NFT_REG_1 and a concatenation to the 32-bit
// registers from NFT_REG32_00, each field padded to 4 bytes, as nft compiles them.
const (
	nftReg1    = unix.NFT_REG_1
	nftReg3200 = unix.NFT_REG32_00
)

// nftHooks are the netfilter hooks of our base chains.
var nftHooks = map[kernel.Hook]*nftables.ChainHook{
	kernel.HookPrerouting: nftables.ChainHookPrerouting, kernel.HookInput: nftables.ChainHookInput,
	kernel.HookForward: nftables.ChainHookForward, kernel.HookOutput: nftables.ChainHookOutput,
	kernel.HookPostrouting: nftables.ChainHookPostrouting,
}

// encodeNftTable turns a ruleset into our table's chains and their expressions, the
// expressions nft compiles the same rules into. A match nftables has no expression for
// (iptables' physdev and ipvs) is an error, never a rule that does something else.
func encodeNftTable(rs *kernel.Ruleset) ([]nftChain, error) {
	var chains []nftChain
	for _, c := range rs.Chains {
		ch := nftChain{name: c.Name}
		if c.Hook != "" {
			switch c.Table {
			case "nat":
				ch.typ = nftables.ChainTypeNAT
			case "filter":
				ch.typ = nftables.ChainTypeFilter
			default:
				return nil, fmt.Errorf("chain %s: type %q", c.Name, c.Table)
			}
			if ch.hook = nftHooks[c.Hook]; ch.hook == nil {
				return nil, fmt.Errorf("chain %s: hook %q", c.Name, c.Hook)
			}
			ch.priority = nftables.ChainPriorityRef(nftables.ChainPriority(c.Priority))
		}
		for i, r := range rs.ChainRules(c) {
			e := &nftEncoder{ipv6: rs.Family == kernel.IPv6}
			if err := e.rule(r); err != nil {
				return nil, fmt.Errorf("chain %s rule %d: %w", c.Name, i+1, err)
			}
			ch.rules = append(ch.rules, e.out)
		}
		chains = append(chains, ch)
	}
	return chains, nil
}

// nftEncoder builds one rule's expressions.
type nftEncoder struct {
	ipv6 bool
	out  nftRule
}

// add appends expressions.
func (e *nftEncoder) add(x ...expr.Any) { e.out.exprs = append(e.out.exprs, x...) }

// rule encodes the matches, then the target.
func (e *nftEncoder) rule(r kernel.Rule) error {
	for _, m := range r.Matches {
		if err := e.match(m); err != nil {
			return err
		}
	}
	return e.target(r.Target)
}

// cmpOp is the comparison of a match, inverted by not.
func cmpOp(not bool) expr.CmpOp {
	if not {
		return expr.CmpOpNeq
	}
	return expr.CmpOpEq
}

// le32 is a 32-bit value in host order, as the kernel keeps marks, conntrack states and
// fib results in registers.
func le32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// match encodes one match.
func (e *nftEncoder) match(m kernel.Match) error {
	switch m := m.(type) {
	case kernel.Comment:
		e.out.comment = m.Text
	case kernel.IP:
		e.ip(m)
	case kernel.Iface:
		data := []byte(m.Name)
		if !m.Prefix {
			data = append(data, make([]byte, unix.IFNAMSIZ-len(data))...) // the whole name, NUL-padded
		}
		e.add(&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: nftReg1}, &expr.Cmp{Op: cmpOp(m.Not), Register: nftReg1, Data: data})
	case kernel.Proto:
		e.add(&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: nftReg1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: nftReg1, Data: []byte{protoNumber(m.Protocol)}})
	case kernel.DstPort:
		e.add(e.load(kernel.FieldDstPort, nftReg1),
			&expr.Cmp{Op: expr.CmpOpEq, Register: nftReg1, Data: binary.BigEndian.AppendUint16(nil, m.Port)})
	case kernel.Lookup:
		reg := uint32(nftReg1)
		if len(m.Key) > 1 {
			reg = nftReg3200
		}
		r := reg
		for _, f := range m.Key {
			e.add(e.load(f, r))
			r += (e.fieldLen(f) + 3) / 4
		}
		e.add(&expr.Lookup{SourceRegister: reg, SetName: m.Set, Invert: m.Not})
	case kernel.CtState:
		var bits uint32
		for _, s := range []struct {
			st  kernel.CtStates
			bit uint32
		}{{kernel.CtNew, expr.CtStateBitNEW}, {kernel.CtEstablished, expr.CtStateBitESTABLISHED}, {kernel.CtRelated, expr.CtStateBitRELATED}} {
			if m.States&s.st != 0 {
				bits |= s.bit
			}
		}
		e.add(&expr.Ct{Register: nftReg1, Key: expr.CtKeySTATE},
			&expr.Bitwise{SourceRegister: nftReg1, DestRegister: nftReg1, Len: 4, Mask: le32(bits), Xor: make([]byte, 4)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: nftReg1, Data: make([]byte, 4)})
	case kernel.Local:
		e.add(&expr.Fib{Register: nftReg1, ResultADDRTYPE: true, FlagSADDR: m.Src, FlagDADDR: !m.Src},
			&expr.Cmp{Op: cmpOp(m.Not), Register: nftReg1, Data: le32(unix.RTN_LOCAL)})
	case kernel.Mark:
		e.add(&expr.Meta{Key: expr.MetaKeyMARK, Register: nftReg1},
			&expr.Bitwise{SourceRegister: nftReg1, DestRegister: nftReg1, Len: 4, Mask: le32(m.Mask), Xor: make([]byte, 4)},
			&expr.Cmp{Op: cmpOp(m.Not), Register: nftReg1, Data: le32(m.Value)})
	default:
		return fmt.Errorf("no nftables expression for %T", m)
	}
	return nil
}

// ip compares an address field with an address or a prefix (masked first).
func (e *nftEncoder) ip(m kernel.IP) {
	f := kernel.DstAddr
	if m.Src {
		f = kernel.SrcAddr
	}
	p := m.Net
	if m.Addr.IsValid() {
		p = netip.PrefixFrom(m.Addr, m.Addr.BitLen())
	}
	e.add(e.load(f, nftReg1))
	if n := e.fieldLen(f); p.Bits() < p.Addr().BitLen() {
		mask := make([]byte, n)
		for i := 0; i < p.Bits(); i++ {
			mask[i/8] |= 0x80 >> (i % 8)
		}
		e.add(&expr.Bitwise{SourceRegister: nftReg1, DestRegister: nftReg1, Len: n, Mask: mask, Xor: make([]byte, n)})
	}
	e.add(&expr.Cmp{Op: cmpOp(m.Not), Register: nftReg1, Data: p.Masked().Addr().AsSlice()})
}

// fieldLen is the bytes a field loads.
func (e *nftEncoder) fieldLen(f kernel.Field) uint32 {
	switch f {
	case kernel.SrcAddr, kernel.DstAddr:
		if e.ipv6 {
			return 16
		}
		return 4
	case kernel.L4Proto:
		return 1
	}
	return 2
}

// load loads a field into register reg.
func (e *nftEncoder) load(f kernel.Field, reg uint32) expr.Any {
	network := func(v4, v6 uint32) expr.Any {
		off := v4
		if e.ipv6 {
			off = v6
		}
		return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: e.fieldLen(f)}
	}
	switch f {
	case kernel.SrcAddr:
		return network(12, 8)
	case kernel.DstAddr:
		return network(16, 24)
	case kernel.L4Proto:
		return &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg}
	}
	return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: reg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}
}

// target encodes the verdict or statement.
func (e *nftEncoder) target(t kernel.Target) error {
	switch t.Kind {
	case kernel.Accept:
		e.add(&expr.Verdict{Kind: expr.VerdictAccept})
	case kernel.Drop:
		e.add(&expr.Verdict{Kind: expr.VerdictDrop})
	case kernel.Return:
		e.add(&expr.Verdict{Kind: expr.VerdictReturn})
	case kernel.Jump:
		e.add(&expr.Verdict{Kind: expr.VerdictJump, Chain: t.Chain})
	case kernel.Reject:
		// nft's plain `reject`: ICMP port unreachable, as iptables' REJECT default.
		code := uint8(3) // ICMP_PORT_UNREACH
		if e.ipv6 {
			code = 4 // ICMPV6_PORT_UNREACH
		}
		e.add(&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: code})
	case kernel.Masquerade, kernel.MasqueradeFully:
		e.add(&expr.Masq{FullyRandom: t.Kind == kernel.MasqueradeFully})
	case kernel.MarkOr, kernel.MarkXor:
		mask, xor := le32(^t.Mark), le32(t.Mark) // or: (mark & ~M) ^ M
		if t.Kind == kernel.MarkXor {
			mask = le32(0xffffffff)
		}
		e.add(&expr.Meta{Key: expr.MetaKeyMARK, Register: nftReg1},
			&expr.Bitwise{SourceRegister: nftReg1, DestRegister: nftReg1, Len: 4, Mask: mask, Xor: xor},
			&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: nftReg1})
	default:
		return fmt.Errorf("target %d", t.Kind)
	}
	return nil
}

// protoNumber is a protocol's IP protocol number.
func protoNumber(p kernel.Protocol) byte {
	switch p {
	case kernel.UDP:
		return unix.IPPROTO_UDP
	case kernel.SCTP:
		return unix.IPPROTO_SCTP
	}
	return unix.IPPROTO_TCP
}

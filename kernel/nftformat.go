package kernel

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// NftSetType is the nftables key of an ipset type in family f, as `nft list` prints it,
// and whether the set holds intervals. Each type becomes the concatenation of what its
// members hold: hash:ip,port is `ipv4_addr . inet_proto . inet_service`, hash:ip,port,net
// the same with an address and `flags interval` (a CIDR is a range), bitmap:port
// `inet_service`. ok is false for a type with no such form.
func NftSetType(t SetType, f Family) (key string, interval, ok bool) {
	addr := "ipv4_addr"
	if f == IPv6 {
		addr = "ipv6_addr"
	}
	switch t {
	case HashIP:
		return addr, false, true
	case BitmapPort:
		return "inet_service", false, true
	case HashIPPort:
		return addr + " . inet_proto . inet_service", false, true
	case HashIPPortIP:
		return addr + " . inet_proto . inet_service . " + addr, false, true
	case HashIPPortNet:
		return addr + " . inet_proto . inet_service . " + addr, true, true
	}
	return "", false, false
}

// NftElement prints a member as `nft list` prints an element of a set of type t
// ("10.96.0.1 . tcp . 443", "30080", "1.2.3.4 . tcp . 80 . 10.0.0.0/8").
func NftElement(t SetType, e SetEntry) string {
	switch t {
	case HashIP:
		return e.IP.String()
	case BitmapPort:
		return strconv.Itoa(int(e.Port))
	}
	s := e.IP.String() + " . " + e.Protocol.Lower() + " . " + strconv.Itoa(int(e.Port))
	switch {
	case t == HashIPPortIP:
		s += " . " + e.IP2.String()
	case t == HashIPPortNet && e.Net.IsSingleIP():
		s += " . " + e.Net.Addr().String()
	case t == HashIPPortNet:
		s += " . " + e.Net.Masked().String()
	}
	return s
}

// FormatNftSets prints sets and their members as `nft list table` prints them inside the
// table, members sorted by their text (nft prints them in the set's own order). A
// concatenation's members go one to a line, as nft prints them; the others on one line.
func FormatNftSets(sets []Set, members map[string][]SetEntry) string {
	var b strings.Builder
	for _, s := range sets {
		key, interval, ok := NftSetType(s.Type, s.Family)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\tset %s {\n\t\ttype %s\n", s.Name, key)
		if interval {
			b.WriteString("\t\tflags interval\n")
		}
		if s.Comment != "" {
			fmt.Fprintf(&b, "\t\tcomment %q\n", s.Comment)
		}
		els := make([]string, 0, len(members[s.Name]))
		for _, e := range members[s.Name] {
			els = append(els, NftElement(s.Type, e))
		}
		slices.Sort(els)
		if len(els) > 0 {
			sep := ", "
			if strings.Contains(key, " . ") {
				sep = ",\n\t\t\t     "
			}
			fmt.Fprintf(&b, "\t\telements = { %s }\n", strings.Join(els, sep))
		}
		b.WriteString("\t}\n\n")
	}
	return b.String()
}

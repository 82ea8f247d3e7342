package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/google/nftables"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// nftKeyType is the nftables key of an ipset type in family f (kernel.NftSetType), and
// whether it is an interval set.
func nftKeyType(t kernel.SetType, f kernel.Family) (nftables.SetDatatype, bool, error) {
	name, interval, ok := kernel.NftSetType(t, f)
	if !ok {
		return nftables.SetDatatype{}, false, fmt.Errorf("set type %s has no nftables form", t)
	}
	types := nftables.ConcatSetTypeElements(nftables.SetDatatype{Name: name})
	if len(types) == 1 {
		return types[0], interval, nil
	}
	kt, err := nftables.ConcatSetType(types...)
	return kt, interval, err
}

// nftElement encodes a member of set s as the kernel takes it: each field of a
// concatenation padded to 4 bytes; an interval set's member is a range, key to keyEnd.
func nftElement(s kernel.Set, e kernel.SetEntry) (key, keyEnd []byte, err error) {
	addr := func(a netip.Addr) ([]byte, error) {
		a = a.Unmap()
		if !a.IsValid() || kernel.FamilyOf(a) != s.Family {
			return nil, fmt.Errorf("address %v is not %s", a, s.Family)
		}
		return a.AsSlice(), nil
	}
	switch s.Type {
	case kernel.HashIP:
		key, err = addr(e.IP)
		return key, nil, err
	case kernel.BitmapPort:
		return binary.BigEndian.AppendUint16(nil, e.Port), nil, nil
	}
	if key, err = addr(e.IP); err != nil {
		return nil, nil, err
	}
	key = append(key, byte(e.Protocol), 0, 0, 0)
	key = append(binary.BigEndian.AppendUint16(key, e.Port), 0, 0)
	switch s.Type {
	case kernel.HashIPPort:
		return key, nil, nil
	case kernel.HashIPPortIP:
		ip2, err := addr(e.IP2)
		return append(key, ip2...), nil, err
	case kernel.HashIPPortNet:
		if !e.Net.IsValid() {
			return nil, nil, fmt.Errorf("entry %v has no net", e)
		}
		p := e.Net.Masked()
		first, err := addr(p.Addr())
		if err != nil {
			return nil, nil, err
		}
		last := lastAddr(p).AsSlice()
		return append(key, first...), append(append([]byte(nil), key...), last...), nil
	}
	return nil, nil, fmt.Errorf("set type %s has no nftables form", s.Type)
}

// lastAddr is the last address of prefix p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// nftEntry decodes a member of set s (the inverse of nftElement).
func nftEntry(s kernel.Set, key, keyEnd []byte) (kernel.SetEntry, error) {
	n := 4
	if s.Family == kernel.IPv6 {
		n = 16
	}
	bad := fmt.Errorf("set %s: member of %d bytes", s.Name, len(key))
	addrAt := func(off int) netip.Addr { a, _ := netip.AddrFromSlice(key[off : off+n]); return a }
	switch s.Type {
	case kernel.HashIP:
		if len(key) != n {
			return kernel.SetEntry{}, bad
		}
		return kernel.SetEntry{IP: addrAt(0)}, nil
	case kernel.BitmapPort:
		if len(key) != 2 {
			return kernel.SetEntry{}, bad
		}
		return kernel.SetEntry{Port: binary.BigEndian.Uint16(key)}, nil
	}
	want := n + 8
	if s.Type != kernel.HashIPPort {
		want += n
	}
	if len(key) != want {
		return kernel.SetEntry{}, bad
	}
	e := kernel.SetEntry{IP: addrAt(0), Protocol: kernel.Protocol(key[n]), Port: binary.BigEndian.Uint16(key[n+4:])}
	switch s.Type {
	case kernel.HashIPPortIP:
		e.IP2 = addrAt(n + 8)
	case kernel.HashIPPortNet:
		first := addrAt(n + 8)
		if len(keyEnd) != want {
			return kernel.SetEntry{}, fmt.Errorf("set %s: range without an end", s.Name)
		}
		last, _ := netip.AddrFromSlice(keyEnd[n+8:])
		p, ok := rangePrefix(first, last)
		if !ok {
			return kernel.SetEntry{}, fmt.Errorf("set %s: range %v-%v is not a prefix", s.Name, first, last)
		}
		e.Net = p
	}
	return e, nil
}

// rangePrefix is the prefix that spans first..last exactly, if there is one.
func rangePrefix(first, last netip.Addr) (netip.Prefix, bool) {
	for bits := first.BitLen(); bits >= 0; bits-- {
		p := netip.PrefixFrom(first, bits)
		if p.Masked().Addr() == first && lastAddr(p) == last {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// EnsureSet implements kernel.Sets: the set in our table of its family, made if
// missing. A set of the name with another key is ErrExist, as for ipsets. MaxElem is not
// used: an nft hash set grows without a bound set at creation.
func (x *Nftables) EnsureSet(s kernel.Set) error {
	kt, interval, err := nftKeyType(s.Type, s.Family)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	c, err := x.c()
	if err != nil {
		return err
	}
	t := x.table(s.Family)
	if have, err := c.GetSetByName(t, s.Name); err == nil {
		if have.KeyType.GetNFTMagic() != kt.GetNFTMagic() || have.Interval != interval {
			return fmt.Errorf("set %s exists with type %s, want %s: %w", s.Name, have.KeyType.Name, kt.Name, kernel.ErrExist)
		}
		have.Table = t
		x.sets[s.Name], x.types[s.Name] = have, s
		return nil
	}
	set := &nftables.Set{Table: t, Name: s.Name, KeyType: kt, Interval: interval,
		Concatenation: len(nftables.ConcatSetTypeElements(kt)) > 1, Comment: s.Comment}
	c.AddTable(t)
	if err := c.AddSet(set, nil); err != nil {
		return err
	}
	if err := x.flush(c, 0); err != nil {
		return nftErr("create set "+s.Name, err)
	}
	x.sets[s.Name], x.types[s.Name] = set, s
	return nil
}

// Adopt finds those of sets that our table already holds with their key type, as
// EnsureSet finds them, and makes nothing: the others stay unknown to this Nftables (a
// read of one is ErrNotFound). A reader that must not change the node, such as cleanup
// reading the ownership sets, calls it before ListEntries. It returns how many it found.
func (x *Nftables) Adopt(sets []kernel.Set) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	c, err := x.c()
	if err != nil {
		return 0
	}
	n := 0
	for _, s := range sets {
		kt, interval, err := nftKeyType(s.Type, s.Family)
		if err != nil {
			continue
		}
		t := x.table(s.Family)
		have, err := c.GetSetByName(t, s.Name)
		if err != nil || have.KeyType.GetNFTMagic() != kt.GetNFTMagic() || have.Interval != interval {
			continue
		}
		have.Table = t
		x.sets[s.Name], x.types[s.Name] = have, s
		n++
	}
	return n
}

// known returns the set EnsureSet made or found. Callers hold mu.
func (x *Nftables) known(name string) (*nftables.Set, kernel.Set, error) {
	set, ok := x.sets[name]
	if !ok {
		return nil, kernel.Set{}, fmt.Errorf("set %s: not ensured: %w", name, kernel.ErrNotFound)
	}
	return set, x.types[name], nil
}

// ListEntries implements kernel.Sets.
func (x *Nftables) ListEntries(name string) ([]kernel.SetEntry, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	set, s, err := x.known(name)
	if err != nil {
		return nil, err
	}
	c, err := x.c()
	if err != nil {
		return nil, err
	}
	els, err := c.GetSetElements(set)
	if err != nil {
		return nil, nftErr("list set "+name, err)
	}
	out := make([]kernel.SetEntry, 0, len(els))
	for _, el := range els {
		e, err := nftEntry(s, el.Key, el.KeyEnd)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// EachEntry implements kernel.Sets, from ListEntries: the nftables library returns a
// set's elements whole.
func (x *Nftables) EachEntry(name string, restart func(), each func(kernel.SetEntry)) error {
	es, err := x.ListEntries(name)
	if err != nil {
		return err
	}
	restart()
	for _, e := range es {
		each(e)
	}
	return nil
}

// CountEntries implements kernel.Sets: nftables tells a set's size only by listing it,
// so -1 (the caller lists).
func (x *Nftables) CountEntries(string) (int, error) { return -1, nil }

// nftPerMessage bounds the members of one netlink message: the element list is one
// attribute, whose length is 16 bits.
const nftPerMessage = 256

// WriteEntries implements kernel.Sets: the ops in transactions of at most MaxBatch
// members, consecutive ops on one set in one message. nftables fails a whole transaction
// on a delete of an absent member (Linux 6.1 has no NFT_MSG_DESTROYSETELEM), so a failed
// transaction is redone one op per transaction, an absent member's delete counted done,
// and a member the kernel refuses (an element overlapping another: ENOTEMPTY) fails
// alone, marked kernel.ErrRefused.
func (x *Nftables) WriteEntries(ops []kernel.SetOp) []error {
	errs := make([]error, len(ops))
	batch := x.MaxBatch
	if batch <= 0 {
		batch = DefaultNftBatch
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for start := 0; start < len(ops); start += batch {
		end := min(start+batch, len(ops))
		if err := x.writeChunk(ops[start:end]); err == nil {
			continue
		}
		x.stats.Redone++
		for i := start; i < end; i++ {
			err := x.writeChunk(ops[i : i+1])
			if ops[i].Delete && errors.Is(err, syscall.ENOENT) {
				err = nil
			}
			errs[i] = nftErr(ops[i].Set, err)
			if en := syscall.Errno(0); errors.As(err, &en) && refusedErrno(en) {
				errs[i] = fmt.Errorf("%w: %w", kernel.ErrRefused, errs[i])
			}
		}
	}
	return errs
}

// writeChunk sends ops as one transaction. Callers hold mu.
func (x *Nftables) writeChunk(ops []kernel.SetOp) error {
	type group struct {
		set *nftables.Set
		els []nftables.SetElement
		del bool
	}
	// Everything encoded before anything is queued: a queued message stays on the
	// connection until the next flush.
	var groups []group
	for i := 0; i < len(ops); {
		j := i + 1
		for j < len(ops) && j-i < nftPerMessage && ops[j].Set == ops[i].Set && ops[j].Delete == ops[i].Delete {
			j++
		}
		set, s, err := x.known(ops[i].Set)
		if err != nil {
			return err
		}
		g := group{set: set, els: make([]nftables.SetElement, 0, j-i), del: ops[i].Delete}
		for _, op := range ops[i:j] {
			key, end, err := nftElement(s, op.Entry)
			if err != nil { // an entry the set's type cannot hold
				return fmt.Errorf("set %s: %w: %w", op.Set, kernel.ErrRefused, err)
			}
			g.els = append(g.els, nftables.SetElement{Key: key, KeyEnd: end})
		}
		groups = append(groups, g)
		i = j
	}
	c, err := x.c()
	if err != nil {
		return err
	}
	for _, g := range groups {
		if g.del {
			err = c.SetDeleteElements(g.set, g.els)
		} else {
			err = c.SetAddElements(g.set, g.els)
		}
		if err != nil { // only for anonymous sets, which we never make
			return err
		}
	}
	return x.flush(c, len(ops))
}

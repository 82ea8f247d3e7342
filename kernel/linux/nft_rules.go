package linux

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Restore implements kernel.Rules for the nftables backend: our table's chains become
// exactly the ruleset's chains, encoded as netlink expressions (nft_encode.go), in one
// transaction (every chain flushed, those no longer in the text deleted, the rest made
// and filled), so traffic never sees a chain half written. Chains of other tables are
// never touched: ours has its own hooks.
func (x *Nftables) Restore(f kernel.Family, rules *kernel.Ruleset) error {
	t := x.table(f)
	chains, err := encodeNftTable(rules)
	if err != nil {
		return fmt.Errorf("nftables rules: %w", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	c, err := x.c()
	if err != nil {
		return err
	}
	have, err := x.chains(c, t)
	if err != nil {
		return err
	}
	n := queueRules(c, t, have, chains)
	if err := x.flush(c, n); err != nil {
		return nftErr("nftables restore "+f.String(), err)
	}
	return nil
}

// queueRules queues the transaction that makes table t's chains exactly chains, where
// the table holds have now, and returns how many rules it adds.
func queueRules(c *nftables.Conn, t *nftables.Table, have []*nftables.Chain, chains []nftChain) int {
	c.AddTable(t)
	for _, h := range have {
		c.FlushChain(h)
	}
	for _, h := range have {
		i := slices.IndexFunc(chains, func(w nftChain) bool { return w.name == h.Name })
		if i < 0 || !sameHook(h, chains[i]) {
			c.DelChain(h)
		}
	}
	made := map[string]*nftables.Chain{}
	for _, w := range chains {
		ch := &nftables.Chain{Name: w.name, Table: t}
		if w.hook != nil {
			ch.Type, ch.Hooknum, ch.Priority = w.typ, w.hook, w.priority
			ch.Policy = new(nftables.ChainPolicyAccept)
		}
		made[w.name] = c.AddChain(ch)
	}
	n := 0
	for _, w := range chains {
		for _, r := range w.rules {
			c.AddRule(&nftables.Rule{Table: t, Chain: made[w.name], Exprs: r.exprs, UserData: r.userData()})
			n++
		}
	}
	return n
}

// sameHook reports whether an existing chain has the hook, type and priority wanted (a
// base chain's hook cannot change in place).
func sameHook(h *nftables.Chain, w nftChain) bool {
	if (h.Hooknum == nil) != (w.hook == nil) {
		return false
	}
	if w.hook == nil {
		return true
	}
	return *h.Hooknum == *w.hook && h.Type == w.typ && h.Priority != nil && *h.Priority == *w.priority
}

// chains lists our table's chains in family t.Family; none when the table is missing.
// Callers hold mu.
func (x *Nftables) chains(c *nftables.Conn, t *nftables.Table) ([]*nftables.Chain, error) {
	all, err := c.ListChainsOfTableFamily(t.Family)
	if err != nil {
		return nil, nftErr("list chains", err)
	}
	var out []*nftables.Chain
	for _, ch := range all {
		if ch.Table != nil && ch.Table.Name == t.Name {
			ch.Table = t
			out = append(out, ch)
		}
	}
	return out, nil
}

// Save implements kernel.Rules for the nftables backend: our table's chains and rules
// as the kernel holds them, one line per chain (its hook) and per rule (its expressions
// as the kernel returns them, hex), so any change to them changes the text. It is not
// the ruleset's nft text: the syncer compares it only with an earlier Save, and at a start
// restores once (one transaction).
func (x *Nftables) Save(f kernel.Family) (string, error) {
	t := x.table(f)
	x.mu.Lock()
	defer x.mu.Unlock()
	c, err := x.c()
	if err != nil {
		return "", err
	}
	chains, err := x.chains(c, t)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, ch := range chains {
		fmt.Fprintf(&b, "chain %s", ch.Name)
		if ch.Hooknum != nil {
			fmt.Fprintf(&b, " type %s hook %d priority %d", ch.Type, *ch.Hooknum, *ch.Priority)
		}
		b.WriteString("\n")
		rules, err := c.GetRules(t, ch)
		if err != nil {
			return "", nftErr("list rules of "+ch.Name, err)
		}
		for _, r := range rules {
			b.WriteString(" ")
			for _, e := range r.Exprs {
				raw, err := expr.Marshal(byte(t.Family), e)
				if err != nil {
					return "", fmt.Errorf("chain %s: %w", ch.Name, err)
				}
				b.WriteString(" " + hex.EncodeToString(raw))
			}
			b.WriteString(" " + hex.EncodeToString(r.UserData) + "\n")
		}
	}
	return b.String(), nil
}

// DeleteTables removes our table in each family, with its chains and sets (`cleanup`,
// and a switch to the iptables backend), and returns how many it deleted. A missing
// table is no error.
func (x *Nftables) DeleteTables() (int, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	c, err := x.c()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		t := x.table(f)
		if _, err := c.ListTableOfFamily(t.Name, t.Family); err != nil {
			continue // not there
		}
		c.DelTable(t)
		if err := x.flush(c, 0); err != nil {
			errs = append(errs, nftErr("delete table "+f.String(), err))
			continue
		}
		n++
	}
	clear(x.sets)
	clear(x.types)
	return n, errors.Join(errs...)
}

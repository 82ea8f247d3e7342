package linux

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/google/nftables"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Nftables is the nftables rules backend: kernel.Sets and kernel.Rules over one
// table of our own per family (`ip ipvs-proxier`, `ip6 ipvs-proxier`), written over
// netlink with github.com/google/nftables. No process is run, and nothing of iptables,
// ipset or the xtables compat layer is used: nodes without them (ip_set and nft_compat
// unmaintained in RHEL 10, legacy xtables off by default from Linux 6.17) can run it.
//
// The sets are the ipsets the iptables backend makes, under the same names, typed as nft
// concatenations (kernel.NftSetType; nftKeyType in nft_sets.go); the rules are the
// kernel.Ruleset proxier.Rules builds, encoded by nft_encode.go. Each write is one nftables transaction: atomic, so traffic never
// sees half a rule set; member writes are cut into transactions of at most MaxBatch
// members, so a cold start at 30,000 Services is never one transaction holding the
// kernel's nfnl lock for its whole length (kubernetes#139513, #135639).
type Nftables struct {
	// Table is our table's name in each family.
	Table string
	// MaxBatch bounds the members of one transaction (0: DefaultNftBatch).
	MaxBatch int

	mu    sync.Mutex
	conn  *nftables.Conn
	sets  map[string]*nftables.Set // by name, as EnsureSet made or found them
	types map[string]kernel.Set
	saved map[kernel.Family]string
	stats NftStats
}

// DefaultNftBatch is the members of one transaction. A transaction is one sendmsg, which
// must fit the socket's send buffer (net.core.wmem_default, 208 KiB: 10,000 members fail
// with EMSGSIZE); at most ~110 bytes a member, 1,000 fit with room. A cold start at
// 30,000 Services (~230,000 members) is then a few hundred short transactions, each
// holding the kernel's nfnl lock briefly (`make bench-kernel` reports the longest).
const DefaultNftBatch = 1000

// NftStats counts the backend's transactions, for the bench.
type NftStats struct {
	Transactions int
	// LargestMembers is the most members one transaction carried.
	LargestMembers int
	// Longest is the longest a transaction took, from its send to the kernel's last
	// answer: the time the kernel held the nfnl lock for it, and a little more.
	Longest time.Duration
	// Redone counts the transactions that failed and were redone one member each.
	Redone int
}

// NewNftables returns the backend for table name.
func NewNftables(table string) *Nftables {
	return &Nftables{Table: table, sets: map[string]*nftables.Set{}, types: map[string]kernel.Set{}, saved: map[kernel.Family]string{}}
}

// Stats returns the transaction counts so far.
func (x *Nftables) Stats() NftStats {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stats
}

// Close drops the netlink socket; a later request opens a new one.
func (x *Nftables) Close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closeLocked()
}

func (x *Nftables) closeLocked() {
	if x.conn != nil {
		_ = x.conn.CloseLasting()
		x.conn = nil
	}
}

// c returns the connection, opening it on first use. Callers hold mu.
func (x *Nftables) c() (*nftables.Conn, error) {
	if x.conn == nil {
		c, err := nftables.New(nftables.AsLasting())
		if err != nil {
			return nil, fmt.Errorf("nftables: %w", err)
		}
		x.conn = c
	}
	return x.conn, nil
}

// flush commits the queued messages as one transaction; a socket error drops the
// connection so the next call opens another.
func (x *Nftables) flush(c *nftables.Conn, members int) error {
	start := time.Now()
	err := c.Flush()
	x.stats.Longest = max(x.stats.Longest, time.Since(start))
	x.stats.Transactions++
	x.stats.LargestMembers = max(x.stats.LargestMembers, members)
	if err != nil && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.EINVAL) {
		x.closeLocked()
	}
	return err
}

// table is our table in family f.
func (x *Nftables) table(f kernel.Family) *nftables.Table {
	fam := nftables.TableFamilyIPv4
	if f == kernel.IPv6 {
		fam = nftables.TableFamilyIPv6
	}
	return &nftables.Table{Name: x.Table, Family: fam}
}

// nftErr maps netlink errnos to the kernel package's sentinels.
func nftErr(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("%s: %w", what, errors.Join(err, kernel.ErrNotFound))
	case errors.Is(err, syscall.EEXIST):
		return fmt.Errorf("%s: %w", what, errors.Join(err, kernel.ErrExist))
	}
	return fmt.Errorf("%s: %w", what, err)
}

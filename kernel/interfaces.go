package kernel

import (
	"errors"
	"net/netip"
)

// Sentinel errors. Every implementation (real, fake, faulty) wraps these so callers can
// test with errors.Is; "already exists" on add and "not found" on delete are success for
// the idempotent helpers in this package.
var (
	ErrExist    = errors.New("already exists")
	ErrNotFound = errors.New("not found")
	// ErrNotDummy: the device named for the VIPs exists and is not a dummy interface.
	// Adopting it would bind every VIP to a real interface and unbind the node's own
	// addresses at the first full sync, so it is refused.
	ErrNotDummy = errors.New("not a dummy interface")
	// ErrInjected marks a failure made up by the Faulty wrapper.
	ErrInjected = errors.New("injected fault")
	// ErrRefused marks a write the kernel refused for what it carries: one object (a
	// set member, a virtual or real server, an address) it will not take as given, such
	// as an element overlapping another in an nftables interval set (ENOTEMPTY), an
	// address of the other family (IPSET_ERR_PROTOCOL, EAFNOSUPPORT) or an attribute it
	// rejects (EINVAL). Retrying it unchanged fails again, and it says nothing of the
	// other writes: it costs only the object's own Service. A failure of the kernel or
	// the socket (ENOBUFS, EPERM, a set that is gone) is not one.
	ErrRefused = errors.New("refused by the kernel")
)

// IPVS programs virtual and real servers. Implementations are safe for concurrent use.
type IPVS interface {
	// ListVirtualServers dumps every virtual server on the host, with its counters (one
	// netlink dump).
	ListVirtualServers() ([]DumpedVS, error)
	// LookupVirtualServers reads the virtual servers keys name, with their counters: one
	// lookup each, where a dump walks the whole table. Entry i is keys[i]'s, zero when
	// the kernel has no such virtual server.
	LookupVirtualServers(keys []VSKey) ([]DumpedVS, error)
	// WriteVirtualServers applies ops in order, batched into as few kernel round trips
	// as the implementation can. Adding a present virtual server fails with ErrExist
	// (the caller adopts it: its real servers are someone's, unknown to it); updating an
	// absent one fails with ErrNotFound; deleting an absent one succeeds. It returns one
	// error (nil for success) per op.
	WriteVirtualServers(ops []VirtualServerOp) []error
	// ListRealServers dumps the destinations of one virtual server, with connection counts.
	ListRealServers(key VSKey) ([]RealServer, error)
	// WriteRealServers applies ops in order, batched into as few kernel round trips as
	// the implementation can. Adding a present real server updates it; deleting an
	// absent one succeeds. It returns one error (nil for success) per op.
	WriteRealServers(ops []RealServerOp) []error
}

// Addresses manages the dummy interface that holds the service VIPs.
// Implementations are safe for concurrent use.
type Addresses interface {
	// EnsureDummy creates the dummy device (left down, as kube-proxy does) if it is
	// missing; an existing device of another type is ErrNotDummy.
	EnsureDummy(dev string) error
	// ListAddresses returns the addresses on dev.
	ListAddresses(dev string) ([]netip.Addr, error)
	// WriteAddresses applies ops to dev in order, batched into as few kernel round
	// trips as the implementation can. Binding a bound address or unbinding an absent
	// one succeeds. It returns one error (nil for success) per op.
	WriteAddresses(dev string, ops []AddressOp) []error
}

// AddressOp is one address bound to or unbound from the dummy interface.
type AddressOp struct {
	Addr   netip.Addr
	Unbind bool
}

// Name is the single operation it stands for, as hooks and operation counts see it.
func (o AddressOp) Name() string { return either(o.Unbind, "UnbindAddress", "BindAddress") }

// Sets manages our sets and their members: ipsets, or the sets of our nftables table.
// Implementations are safe for concurrent use.
type Sets interface {
	// EnsureSet creates the set if it is missing; an existing set of the same type is
	// kept. A hash set is remade with set.MaxElem, its members kept, when it holds fewer,
	// or when it holds more and its members fill at most half of set.MaxElem (RemakeSet).
	EnsureSet(set Set) error
	ListEntries(set string) ([]SetEntry, error)
	// EachEntry lists the set as ListEntries does, calling each with every member as the
	// listing streams in (restart before, and again before a listing read anew), so the
	// caller need not hold them all as []SetEntry (88 bytes each).
	EachEntry(set string, restart func(), each func(SetEntry)) error
	// CountEntries returns how many members the set has without listing them, or -1
	// when the kernel cannot tell.
	CountEntries(set string) (int, error)
	// WriteEntries applies ops in order, batched into as few kernel round trips as the
	// implementation can. Adding a present member or deleting an absent one succeeds.
	// It returns one error (nil for success) per op.
	WriteEntries(ops []SetOp) []error
}

// OpKind says what a VirtualServerOp or RealServerOp does.
type OpKind uint8

// The kinds of VirtualServerOp and RealServerOp.
const (
	OpAdd OpKind = iota
	OpUpdate
	OpDelete
)

// opNames are the operation names of each kind, for virtual and for real servers, as
// constants: Name runs for every op of a batch.
var opNames = [...][2]string{
	OpAdd:    {"AddVirtualServer", "AddRealServer"},
	OpUpdate: {"UpdateVirtualServer", "UpdateRealServer"},
	OpDelete: {"DeleteVirtualServer", "DeleteRealServer"},
}

// VirtualServerOp is one virtual server added, updated or deleted (a delete needs only
// VS.VSKey).
type VirtualServerOp struct {
	VS   VirtualServer
	Kind OpKind
}

// Name is the single operation it stands for, as hooks and operation counts see it.
func (o VirtualServerOp) Name() string { return opNames[o.Kind][0] }

// RealServerOp is one real server added, re-weighted or deleted.
type RealServerOp struct {
	VS   VSKey
	RS   RealServer
	Kind OpKind
}

// Name is the single operation it stands for, as hooks and operation counts see it.
func (o RealServerOp) Name() string { return opNames[o.Kind][1] }

// SetOp is one member added to or deleted from a set.
type SetOp struct {
	Set    string
	Entry  SetEntry
	Delete bool
}

// Name is the single-entry operation it stands for: "AddEntry" or "DelEntry". Hooks and
// operation counts see a batch as its ops.
func (o SetOp) Name() string { return either(o.Delete, "DelEntry", "AddEntry") }

// either is yes if cond holds, otherwise no.
func either(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// Rules applies the rendered rules of our own chains. Implementations are safe for
// concurrent use.
type Rules interface {
	// Restore makes our chains in the family's tables equal rules, and ensures its rules
	// in built-in chains (the jumps from INPUT, ...). Other chains are left alone.
	Restore(f Family, rules *Ruleset) error
	// Save returns our chains as the kernel has them now, in the form Restore takes, so a
	// caller can detect drift by comparing text.
	Save(f Family) (string, error)
}

// Conntrack reads table statistics and deletes stale UDP flows. It never dumps the whole
// table into memory (kubernetes/kubernetes#129982).
type Conntrack interface {
	// ClearUDP deletes UDP flows whose original destination is vip:port and, when
	// endpoint is valid, whose reply source is that endpoint.
	ClearUDP(vip netip.AddrPort, endpoint netip.AddrPort) error
	// ReconcileUDP reads the family's UDP flows (filtered by the kernel, never the whole
	// table) and deletes each for which stale(original destination, reply source) is
	// true. It returns how many it deleted.
	ReconcileUDP(f Family, stale func(orig, reply netip.AddrPort) bool) (int, error)
	// Stats returns the table's global and per-CPU counters.
	Stats() (ConntrackStats, error)
}

// ConntrackStats is a snapshot of the conntrack table's pressure counters.
type ConntrackStats struct {
	Entries      uint64
	Max          uint64
	Drop         uint64
	EarlyDrop    uint64
	InsertFailed uint64
}

// Kernel bundles the backends the sync loop drives.
type Kernel struct {
	IPVS      IPVS
	Addresses Addresses
	Sets      Sets
	Rules     Rules
	Conntrack Conntrack
}

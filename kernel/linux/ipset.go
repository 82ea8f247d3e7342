package linux

import (
	"fmt"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// IPSets manages ipsets over netlink; the ipset binary is never run.
//
// Listings go over their own sockets (list), so that a write never waits for one: the
// periodic full sync lists every set with the syncer's lock released, 228,004 entries at
// 30,000 Services (~15 s in the emulated VM), and on the one connection a partial sync's
// member write waited for all of it (an endpoint change programmed after 9.8 s, `make
// bench-scale`). The kernel serves a dump on one socket and a write on
// another side by side.
type IPSets struct{ conn, list ipsetConn }

// Close drops the sockets; a later request opens new ones.
func (x *IPSets) Close() {
	x.conn.close()
	x.list.close()
}

// duringList runs inside each listing, on its connection; tests replace it.
var duringList = func() {}

// setRevisions are explicit: vishvananda/netlink's defaults are wrong for several types
// (vishvananda/netlink#1030). These are the oldest revisions with the features we use
// (SCTP ports, IPv6), present in every kernel since 3.x.
var setRevisions = map[kernel.SetType]uint8{
	kernel.HashIP: 1, kernel.HashIPPort: 1, kernel.HashIPPortIP: 1, kernel.HashIPPortNet: 2, kernel.BitmapPort: 1,
}

// EnsureSet implements kernel.Sets.
func (x *IPSets) EnsureSet(s kernel.Set) error {
	opts := netlink.IpsetCreateOptions{Revision: setRevisions[s.Type], MaxElements: s.MaxElem}
	if s.Type == kernel.BitmapPort {
		opts.PortFrom, opts.PortTo = 0, 65535
	} else {
		opts.Family = unix.AF_INET
		if s.Family == kernel.IPv6 {
			opts.Family = unix.AF_INET6
		}
	}
	err := x.conn.with(func(h *netlink.Handle, _ map[int]*nl.SocketHandle) error {
		return h.IpsetCreate(s.Name, string(s.Type), opts)
	})
	if err == nil {
		return nil
	}
	if !isExist(err) && !isErrno(err, syscall.EEXIST) {
		return fmt.Errorf("create set %s: %w", s.Name, err)
	}
	// It exists: it must have our type (a type change breaks in place, kubernetes#77265).
	// The header only: listing the members too made this check most of an idle full
	// sync's CPU at 10,000 Services.
	h, lerr := x.setHeader(s.Name)
	if lerr != nil {
		return lerr
	}
	if h.typ != string(s.Type) {
		return fmt.Errorf("set %s exists with type %s, want %s: %w", s.Name, h.typ, s.Type, kernel.ErrExist)
	}
	if kernel.RemakeSet(h.maxElem, s.MaxElem, h.count) {
		return x.resize(s, opts)
	}
	return nil
}

// ListEntries implements kernel.Sets, over the listing connection (listEntries).
func (x *IPSets) ListEntries(name string) ([]kernel.SetEntry, error) {
	var out []kernel.SetEntry
	if err := x.EachEntry(name, func() { out = out[:0] }, func(e kernel.SetEntry) { out = append(out, e) }); err != nil {
		return nil, err
	}
	return out, nil
}

// EachEntry implements kernel.Sets, over the listing connection (listEntries).
func (x *IPSets) EachEntry(name string, restart func(), each func(kernel.SetEntry)) error {
	var err error
	for try := 0; try < 5; try++ { // a dump interrupted by a concurrent change is retried
		if err = x.listEntries(name, restart, each); err == nil || !interrupted(err) {
			break
		}
	}
	return wrapErr("list set "+name, err)
}

package linux

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// resizeName is the scratch set a set is remade through. One at a time (EnsureSet runs
// under the sync lock), and one a crash left behind is destroyed first.
const resizeName = "IPVS-PROXIER-RESIZE"

// resize remakes the existing set s, made with another maxelem, with s.MaxElem (opts),
// its members kept. The kernel cannot change a set's maxelem, so a new set gets the
// members and IPSET_CMD_SWAP exchanges the two under their names: iptables rules match
// a set by its index, which keeps the name, so they match the new set from then on
// with no moment without one (ipset(8), "swap"). The old set is destroyed.
func (x *IPSets) resize(s kernel.Set, opts netlink.IpsetCreateOptions) error {
	fail := func(step string, err error) error {
		_ = x.conn.with(func(h *netlink.Handle, _ map[int]*nl.SocketHandle) error { return h.IpsetDestroy(resizeName) })
		return fmt.Errorf("resize set %s to maxelem %d: %s: %w", s.Name, s.MaxElem, step, err)
	}
	err := x.conn.with(func(h *netlink.Handle, _ map[int]*nl.SocketHandle) error {
		_ = h.IpsetDestroy(resizeName) // reports success when there is none
		return h.IpsetCreate(resizeName, string(s.Type), opts)
	})
	if err != nil {
		return fail("create "+resizeName, err)
	}
	entries, err := x.ListEntries(s.Name)
	if err != nil {
		return fail("list", err)
	}
	ops := make([]kernel.SetOp, len(entries))
	for i, e := range entries {
		ops[i] = kernel.SetOp{Set: resizeName, Entry: e}
	}
	if err := errors.Join(x.WriteEntries(ops)...); err != nil {
		return fail("copy the members", err)
	}
	err = x.conn.with(func(h *netlink.Handle, _ map[int]*nl.SocketHandle) error { return h.IpsetSwap(s.Name, resizeName) })
	if err != nil {
		return fail("swap", err)
	}
	err = x.conn.with(func(h *netlink.Handle, _ map[int]*nl.SocketHandle) error { return h.IpsetDestroy(resizeName) })
	return wrapErr("destroy "+resizeName+" after resizing "+s.Name, err)
}

package addrs

import (
	"net/netip"
	"slices"
	"sync/atomic"
)

// The dummy interface's addresses are dumped by every full sync that dumps every
// virtual server, and otherwise only when something may have changed them: at 30,000
// Services the dump of its 45,000 addresses was a third of the CPU of a periodic full
// sync in the emulated VM, and was read only to find what never changes on an idle
// node. The address watch (kernel/linux WatchAddresses) reports every notification
// for the dummy (RTM_NEWADDR, RTM_DELADDR: ours, a hand's `ip addr del`, a stranger's
// `ip addr add`, the link's deletion) with DummyAddressesChanged(true), and the end of
// its subscription (notifications lost: ENOBUFS) with DummyAddressesChanged(false).
// Without a watch (it failed to subscribe, or tests) every full sync dumps them, as
// before; with one, a light full sync (the syncer's lookup.go) trusts the cache unless a
// notification came since the last dump. So drift of the addresses is still repaired
// by the next full sync.

// watch is the state the address watch reports.
type watch struct {
	// watching is set while a subscription is open; dirty when a notification (or the
	// subscription's start or end) came since the last dump.
	watching, dirty atomic.Bool
}

// DummyAddressesChanged is the address watch's report for the dummy interface: an
// address on it was added or removed, or the subscription began (watching) or ended
// (not watching). Safe from any goroutine.
func (r *Reconciler) DummyAddressesChanged(watching bool) {
	r.watch.dirty.Store(true)
	r.watch.watching.Store(watching)
}

// Due reports whether this full sync dumps the dummy's addresses: when it dumps
// every virtual server, when no watch is open, or when the watch saw a change since the
// last dump. It clears the change before the dump, so one seen during it counts for the
// next full sync.
func (r *Reconciler) Due(dumpAll bool) bool {
	changed := r.watch.dirty.Swap(false)
	return dumpAll || changed || !r.watch.watching.Load()
}

// Changed reports whether the watch saw a change since the last dump.
func (r *Reconciler) Changed() bool { return r.watch.dirty.Load() }

// Cached lists the cached addresses, for a full sync that trusts them instead of a
// dump.
func (r *Reconciler) Cached() []netip.Addr {
	return slices.Collect(r.addrs.Keys())
}

package linux

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
)

// watchBuffer is the address subscription's socket receive buffer: a cold start that
// binds 30,000 addresses sends itself as many notifications, and an overflow (ENOBUFS)
// ends vishvananda/netlink's subscription.
const watchBuffer = 4 << 20

// resubscribeDelay spaces the subscriptions after one ends.
var resubscribeDelay = time.Second

// subscribe is netlink.AddrSubscribeWithOptions; tests replace it.
var subscribe = netlink.AddrSubscribeWithOptions

// nodeAddresses is LocalAddresses; tests replace it.
var nodeAddresses = LocalAddresses

// WatchAddresses calls changed after an address is added to or removed from any
// interface but skip (the dummy, whose addresses we manage), until done closes. A
// node's NodePort addresses then follow its interfaces at once, where a periodic full
// sync would lag by up to syncPeriod; kube-proxy re-reads them on every sync instead.
//
// A notification for an address already reported (an IPv6 router advertisement renews
// a SLAAC address's lifetime with one, and the VM's user-mode network advertises every
// few minutes) changes no address and calls nothing: each such call was a change to
// every Service, a full sync that held the runner for up to 21.6 s at 30,000 Services
// (`make bench-scale` at --log-level=debug).
//
// The skipped interface is known by its index, resolved once (and again only for a
// notification from an index not seen before), so the dummy's own notifications cost no
// netlink request each. A subscription error (ENOBUFS: notifications were lost) ends
// vishvananda/netlink's subscription; it is opened again after resubscribeDelay, until
// done, and changed is called then if the node's addresses (the skipped interface's
// aside) are not those read when the lost subscription opened. A cold start's binds to
// the dummy can overflow the socket (a notification each, 100,000 at 100,000 Services),
// and a call for each overflow is a change to every Service, a whole translation.
//
// skipped, if not nil, hears about the skipped interface instead: skipped(true) once
// subscribed, for each of its notifications and when subscribed again; skipped(false)
// when a subscription ends. The syncer then dumps the dummy's addresses only when they
// may have changed (sync/reconcile/addrs watch.go).
func WatchAddresses(skip string, done <-chan struct{}, changed func(), skipped func(watching bool)) error {
	if skipped == nil {
		skipped = func(bool) {}
	}
	var skipIndex atomic.Int32 // 0: not known yet
	// atOpen are the node's addresses as the current subscription opened, if read.
	var atOpen []netip.Addr
	var atOpenErr error
	open := func() (chan netlink.AddrUpdate, error) {
		atOpen, atOpenErr = nodeAddresses(skip)
		ch := make(chan netlink.AddrUpdate, 1024)
		err := subscribe(ch, done, netlink.AddrSubscribeOptions{ErrorCallback: func(error) {}, ReceiveBufferSize: watchBuffer})
		return ch, wrapErr("subscribe to address changes", err)
	}
	ch, err := open()
	if err != nil {
		return err
	}
	skipped(true)
	go func() {
		for {
			known := map[linkAddr]struct{}{} // what this subscription has reported
			for u := range ch {
				if idx := int32(u.LinkIndex); idx == skipIndex.Load() {
					skipped(true)
					continue
				} else if l, err := netlink.LinkByIndex(u.LinkIndex); err == nil && l.Attrs().Name == skip {
					skipIndex.Store(idx)
					skipped(true)
					continue
				}
				if addressSetSame(known, u) {
					continue
				}
				changed()
			}
			// The subscription ended: done closed, or an error ended it.
			skipped(false)
			for {
				select {
				case <-done:
					return
				case <-time.After(resubscribeDelay):
				}
				before, beforeErr := atOpen, atOpenErr
				if ch, err = open(); err == nil {
					skipped(true)
					if beforeErr != nil || atOpenErr != nil || !sameAddresses(before, atOpen) {
						changed() // what may have happened while notifications were lost
					}
					break
				}
			}
		}
	}()
	return nil
}

// linkAddr is an address on an interface.
type linkAddr struct {
	link   int
	prefix netip.Prefix
}

// addressSetSame records u in known and reports whether the set of addresses it
// describes is unchanged: an addition of an address already known (a renewal, a flag
// change). Any removal is a change: the address may have come before the subscription.
func addressSetSame(known map[linkAddr]struct{}, u netlink.AddrUpdate) bool {
	a, ok := netip.AddrFromSlice(u.LinkAddress.IP)
	if !ok {
		return false
	}
	ones, _ := u.LinkAddress.Mask.Size()
	k := linkAddr{u.LinkIndex, netip.PrefixFrom(a.Unmap(), ones)}
	_, had := known[k]
	if u.NewAddr {
		known[k] = struct{}{}
		return had
	}
	delete(known, k)
	return false
}

// sameAddresses reports whether a and b hold the same addresses, in any order.
func sameAddresses(a, b []netip.Addr) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, netip.Addr.Compare)
	slices.SortFunc(b, netip.Addr.Compare)
	return slices.Equal(a, b)
}

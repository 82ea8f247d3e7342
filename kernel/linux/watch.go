package linux

import (
	"net/netip"
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
// netlink request each. A subscription error (ENOBUFS: notifications were lost) calls
// changed once, so a full sync re-reads everything, and vishvananda/netlink then ends
// the subscription: it is opened again after resubscribeDelay, until done.
//
// skipped, if not nil, hears about the skipped interface instead: skipped(true) once
// subscribed, for each of its notifications and when subscribed again; skipped(false)
// when a subscription ends. The syncer then dumps the dummy's addresses only when they
// may have changed (sync/reconcile addrwatch.go).
func WatchAddresses(skip string, done <-chan struct{}, changed func(), skipped func(watching bool)) error {
	if skipped == nil {
		skipped = func(bool) {}
	}
	var skipIndex atomic.Int32 // 0: not known yet
	open := func() (chan netlink.AddrUpdate, error) {
		ch := make(chan netlink.AddrUpdate, 1024)
		err := subscribe(ch, done, netlink.AddrSubscribeOptions{ErrorCallback: func(error) { changed() }, ReceiveBufferSize: watchBuffer})
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
				if ch, err = open(); err == nil {
					skipped(true)
					changed() // what happened while unsubscribed
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

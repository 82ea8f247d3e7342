package linux

import (
	"github.com/vishvananda/netlink"
)

// WatchAddresses calls changed after an address is added to or removed from any
// interface but skip (the dummy, whose addresses we manage), until done closes. A
// node's NodePort addresses then follow its interfaces at once, where a periodic full
// sync would lag by up to syncPeriod; kube-proxy re-reads them on every sync instead.
// On a subscription error changed is called too, so a full sync re-reads everything.
func WatchAddresses(skip string, done <-chan struct{}, changed func()) error {
	ch := make(chan netlink.AddrUpdate, 256)
	err := netlink.AddrSubscribeWithOptions(ch, done, netlink.AddrSubscribeOptions{ErrorCallback: func(error) { changed() }})
	if err != nil {
		return wrapErr("subscribe to address changes", err)
	}
	go func() {
		for u := range ch {
			if l, err := netlink.LinkByIndex(u.LinkIndex); err == nil && l.Attrs().Name == skip {
				continue
			}
			changed()
		}
	}()
	return nil
}

// Package linux implements the kernel seam on a real Linux kernel: IPVS through
// github.com/moby/ipvs, the dummy interface, addresses and ipsets through
// github.com/vishvananda/netlink, iptables through iptables-restore, and conntrack
// through ctnetlink. Every type here is safe for concurrent use.
package linux

package linux

import (
	"encoding/binary"
	"errors"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// nftGeneration returns the nf_tables ruleset generation of the current network
// namespace (NFT_MSG_GETGEN, answered with NFTA_GEN_ID): the kernel raises it on every
// committed change to any nf_tables table, and iptables-nft writes through nf_tables, so
// an unchanged generation means an unchanged ruleset; counters do not raise it.
// iptables-nft itself checks its ruleset cache against the same number (mnl_genid_get in
// iptables' nft.c). One netlink request, where an iptables-nft-save is a process that
// dumps and prints the whole ruleset.
func nftGeneration() (uint32, error) {
	req := nl.NewNetlinkRequest(unix.NFT_MSG_GETGEN|(unix.NFNL_SUBSYS_NFTABLES<<8), 0)
	req.AddData(&nl.Nfgenmsg{NfgenFamily: uint8(unix.AF_UNSPEC), Version: nl.NFNETLINK_V0, ResId: 0})
	msgs, err := req.Execute(unix.NETLINK_NETFILTER, 0)
	if err != nil {
		return 0, wrapErr("nf_tables generation", err)
	}
	for _, m := range msgs {
		if len(m) < 4 {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[4:]) // after the nfgenmsg header
		if err != nil {
			return 0, err
		}
		for _, a := range attrs {
			if a.Attr.Type&nl.NLA_TYPE_MASK == unix.NFTA_GEN_ID && len(a.Value) == 4 {
				return binary.BigEndian.Uint32(a.Value), nil
			}
		}
	}
	return 0, errors.New("nf_tables generation: no NFTA_GEN_ID in the answer")
}

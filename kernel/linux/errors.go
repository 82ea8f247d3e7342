package linux

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/vishvananda/netlink/nl"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// wrapErr maps kernel errnos to the seam's sentinels, keeping the original text.
func wrapErr(op string, err error, notFound ...syscall.Errno) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, syscall.EEXIST):
		return fmt.Errorf("%s: %w: %w", op, kernel.ErrExist, err)
	case errors.Is(err, syscall.ESRCH), errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.ENODEV):
		return fmt.Errorf("%s: %w: %w", op, kernel.ErrNotFound, err)
	}
	for _, e := range notFound {
		if errors.Is(err, e) {
			return fmt.Errorf("%s: %w: %w", op, kernel.ErrNotFound, err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// writeErr is wrapErr for the answer to one object's write in a batch: an errno that
// refuses the object itself (refusedErrno) is marked kernel.ErrRefused, so the syncer
// holds it against that object's Service alone.
func writeErr(op string, en syscall.Errno) error {
	err := wrapErr(op, en)
	if refusedErrno(en) {
		return fmt.Errorf("%w: %w", kernel.ErrRefused, err)
	}
	return err
}

// refusedErrno reports whether en, answering one object's write, refuses that object:
// what it carries is invalid, of the wrong family, or overlaps another (nft_pipapo and
// nft_rbtree answer an overlapping interval with ENOTEMPTY or EEXIST; ip_set's address
// and range checks with their own codes). A full hash (IPSET_ERR_HASH_FULL), a missing
// set or scheduler module, a lack of privilege or of buffer space is the node's, not the
// object's.
func refusedErrno(en syscall.Errno) bool {
	switch en {
	case syscall.EINVAL, syscall.ERANGE, syscall.ENOTEMPTY, syscall.EEXIST, syscall.EAFNOSUPPORT,
		syscall.EOPNOTSUPP, syscall.EPROTONOSUPPORT, syscall.EOVERFLOW, syscall.E2BIG:
		return true
	case nl.IPSET_ERR_PROTOCOL, nl.IPSET_ERR_TYPE_MISMATCH, nl.IPSET_ERR_INVALID_CIDR, nl.IPSET_ERR_INVALID_NETMASK,
		nl.IPSET_ERR_INVALID_FAMILY, nl.IPSET_ERR_IPADDR_IPV4, nl.IPSET_ERR_IPADDR_IPV6:
		return true
	}
	// ip_set_hash.h: the codes after IPSET_ERR_HASH_FULL (IPSET_ERR_TYPE_SPECIFIC) are
	// an element's: IPSET_ERR_HASH_ELEM, _INVALID_PROTO, _MISSING_PROTO, _HASH_RANGE*.
	return en > nl.IPSET_ERR_TYPE_SPECIFIC && en < nl.IPSET_ERR_TYPE_SPECIFIC+16
}

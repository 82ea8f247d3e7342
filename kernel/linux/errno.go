package linux

import (
	"errors"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// The netlink errors every backend tells apart: a dump cut short, ipset's "exists", and
// an errno under any number of wrappers.

// interrupted reports a netlink dump that a concurrent change cut short; its result
// may be inconsistent and the dump must be redone.
func interrupted(err error) bool {
	return errors.Is(err, netlink.ErrDumpInterrupted) || isErrno(err, syscall.EINTR)
}

// isExist reports IPSET_ERR_EXIST: on create and add, "already exists"; on del, "not
// in the set". vishvananda/netlink returns it as nl.IPSetError.
func isExist(err error) bool {
	return errors.Is(err, nl.IPSetError(nl.IPSET_ERR_EXIST)) || isErrno(err, syscall.Errno(nl.IPSET_ERR_EXIST))
}

func isErrno(err error, e syscall.Errno) bool {
	var en syscall.Errno
	if ok := asErrno(err, &en); ok {
		return en == e
	}
	return false
}

func asErrno(err error, out *syscall.Errno) bool {
	for err != nil {
		if en, ok := err.(syscall.Errno); ok {
			*out = en
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

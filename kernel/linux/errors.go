package linux

import (
	"errors"
	"fmt"
	"syscall"

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

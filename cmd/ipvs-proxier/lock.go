package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// defaultLockFile is where the daemon takes its exclusive lock. deploy/ mounts the
// node's /run/ipvs-proxier there, so two daemons on one node (a second one started in
// the pod by hand, or two pods) never write the same kernel state at once.
const defaultLockFile = "/run/ipvs-proxier/ipvs-proxier.lock"

// lockWait is how long a starting daemon waits for the lock: a restart may find its
// predecessor still exiting (it stops within a second of SIGTERM).
const lockWait = 10 * time.Second

// acquireLock takes an exclusive flock on path, waiting up to wait for it, and writes
// our PID into the file. The lock lasts until the process exits (the kernel drops it
// with the file descriptor, so a crash never leaves it held).
func acquireLock(path string, wait time.Duration) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			holder, _ := os.ReadFile(path)
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("another ipvs-proxier (pid %s) holds %s: only one daemon may program a node; stop it first",
					strings.TrimSpace(string(holder)), path)
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

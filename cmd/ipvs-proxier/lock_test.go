package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLockIsExclusive: a second daemon cannot take the lock while the first holds it,
// and is told who holds it; once released, it can.
func TestLockIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "ipvs-proxier.lock")
	first, err := acquireLock(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = acquireLock(path, 300e6)
	if err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), "only one daemon") {
		t.Fatalf("second lock: %v", err)
	}
	_ = first.Close()
	second, err := acquireLock(path, 0)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	_ = second.Close()
}

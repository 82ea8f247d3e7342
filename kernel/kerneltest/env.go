// Package kerneltest gates the tests that touch a real kernel: they run only where the
// test owns it, a network namespace made for them or the VM, never the machine's own.
package kerneltest

import (
	"os"
	"testing"
)

// InVM reports whether the tests run in the real-kernel VM (`make test-vm`), whose
// kernel has IPVS and which the test owns entirely.
func InVM() bool { return os.Getenv("IPVS_PROXIER_TEST_IPVS") == "1" }

// RequireIPVS skips t unless it runs in the VM.
func RequireIPVS(t testing.TB) {
	t.Helper()
	if !InVM() {
		t.Skip("needs a kernel with IPVS: run through `make test-vm`")
	}
}

// RequireNetns skips t unless it runs in a network namespace made for it
// (kernel/linux/hosttest.sh) or the VM.
func RequireNetns(t testing.TB) {
	t.Helper()
	if os.Getenv("IPVS_PROXIER_TEST_NETNS") != "1" {
		t.Skip("real-kernel test: run through kernel/linux/hosttest.sh (fresh netns) or the VM")
	}
}

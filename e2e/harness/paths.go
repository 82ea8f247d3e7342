// Package harness runs the end-to-end environment: etcd and kube-apiserver built from
// the Go module proxy and started on loopback, and node VMs (a real Debian kernel under
// qemu) running ipvs-proxier exactly as the DaemonSet in deploy/ runs it, with an agent
// the tests talk to through a qemu hostfwd.
package harness

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// KubeVersion is the Kubernetes release the harness builds.
const KubeVersion = "v1.37.2"

// Cache is where built binaries and the VM kernel live, outside the repo.
func Cache() string {
	if c := os.Getenv("IPVS_PROXIER_CACHE"); c != "" {
		return c
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "ipvs-proxier")
	}
	return filepath.Join(os.TempDir(), "ipvs-proxier-cache")
}

// RepoRoot is the root of the ipvs-proxier checkout.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// E2EDir is the e2e module's folder.
func E2EDir() string { return filepath.Join(RepoRoot(), "e2e") }

// FreePort asks the kernel for an unused loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Logf prints a progress line; the first runs are slow and should say why.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
}

// WaitListening waits until a socket listens on 127.0.0.1:port, reading /proc/net/tcp
// rather than connecting: qemu's socket network accepts exactly one connection, and a
// probe would take the place of the peer VM.
func WaitListening(port int, timeout time.Duration) error {
	want := fmt.Sprintf("0100007F:%04X", port)
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile("/proc/net/tcp")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) > 3 && f[1] == want && f[3] == "0A" { // TCP_LISTEN
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on 127.0.0.1:%d after %v", port, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// RequireE2E skips t unless IPVS_PROXIER_E2E=1: it starts real processes (a control
// plane, a VM, `make`).
func RequireE2E(t testing.TB) {
	t.Helper()
	if os.Getenv("IPVS_PROXIER_E2E") != "1" {
		t.Skip("set IPVS_PROXIER_E2E=1, or run `make e2e`")
	}
}

// TestAllEnv is the variable `make test-all` sets: the proofs that repeat one `make test`
// already gives on another path, or that take minutes of emulated time to show one thing
// (a reboot, a 2.5-minute outage, each migration, a second image build), run only there.
const TestAllEnv = "IPVS_PROXIER_TEST_ALL"

// TestAll reports whether the run is `make test-all`.
func TestAll() bool { return os.Getenv(TestAllEnv) == "1" }

// RequireAll skips t unless the run is `make test-all`; why says what `make test` keeps
// of the same proof.
func RequireAll(t testing.TB, why string) {
	t.Helper()
	if !TestAll() {
		t.Skip("in `make test-all` (" + TestAllEnv + "=1); make test keeps " + why)
	}
}

// Main is an e2e package's TestMain: without IPVS_PROXIER_E2E=1 it says the package is
// skipped and runs the tests (which skip themselves), else it exits with run's code, or
// prints run's error (a setup that failed) and exits 1.
func Main(m *testing.M, name string, run func(*testing.M) (int, error)) {
	if os.Getenv("IPVS_PROXIER_E2E") != "1" {
		fmt.Println(name + ": skipped (set IPVS_PROXIER_E2E=1, or run `make e2e`)")
		os.Exit(m.Run())
	}
	code, err := run(m)
	if err != nil {
		fmt.Printf("%s: %v\n", name, err)
		code = 1
	}
	os.Exit(code)
}

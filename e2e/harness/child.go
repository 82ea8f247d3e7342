package harness

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// tiedToUs makes cmd's process die with the test binary that started it. A test that
// fails in TestMain, or is killed by go test's timeout, would otherwise leave qemu (a
// TCG VM spins a host core) or an apiserver running through the tiers after it; CI runs
// them one after another on two cores. PR_SET_PDEATHSIG (prctl(2)) fires when the thread
// that forked exits; Go's os/exec forks from a runtime thread that lives as long as the
// process unless a goroutine locked to it exits, which the harness never does.
func tiedToUs(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// tail is the last n lines of the file at path (for an error that names a log: CI shows
// the test's output, not the files it left behind).
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

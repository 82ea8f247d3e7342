package main

import (
	"errors"
	"os"
	"syscall"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
)

// setupProblem sorts a failure of the node's one-time setup (a sysctl, a module). In an
// unprivileged container /proc/sys is read-only and modprobe has no CAP_SYS_MODULE: the
// privileged init container (--init-only) did that work when the pod started. A setting
// the configuration needs afterwards (a container restart after a config change does not
// rerun the init container) cannot be made there; the daemon then runs on, not ready,
// and says so (log, Node Event, /readyz, /status) instead of crash-looping or staying
// silent. In --init-only mode, whose job the setup is, every failure is fatal.
func setupProblem(err error, initOnly bool) (problem string, fatal error) {
	if err == nil {
		return "", nil
	}
	if initOnly || !(errors.Is(err, syscall.EROFS) || errors.Is(err, os.ErrPermission)) {
		return "", err
	}
	return err.Error() + ": this container may not change it (read-only /proc/sys); the init container sets it " +
		"when the pod starts: delete the pod so that it runs again", nil
}

// reportSetup logs and announces each setup problem on the Node, once at start.
func reportSetup(log *zap.Logger, events nodeEvents, problems []string) {
	for _, p := range problems {
		log.Error("Node setup incomplete; not ready", zap.String("problem", p))
		events.NodeEvent(v1.EventTypeWarning, "NodeSetupIncomplete", p)
	}
}

package benchkit

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// NodeName is the benchmarks' node.
const NodeName = "bench-node"

// StartNode starts a control plane for the benchmarks (a NodePort range wide enough for
// 15,000 NodePorts, the half of 30,000 Services the workload makes, and room for the
// loader's parallel requests), applies deploy/ and boots a 4 GiB node that runs no proxy
// until one is started. stop stops both.
func StartNode(ctx context.Context) (cp *harness.ControlPlane, node *harness.Node, stop func(), err error) {
	cp, err = harness.StartControlPlane("--service-node-port-range=20000-59999", "--max-requests-inflight=1000")
	if err != nil {
		return nil, nil, nil, err
	}
	dep, err := cp.ApplyDeploy(ctx)
	if err == nil {
		node, err = cp.StartNodeWith(ctx, NodeName, dep, harness.NodeOptions{NoDaemon: true, MemoryMB: 4096})
	}
	if err != nil {
		cp.Stop()
		return nil, nil, nil, err
	}
	return cp, node, func() { node.Stop(); cp.Stop() }, nil
}

// Machine describes the host and the node VM for a results file.
func Machine(node *harness.Node) string {
	kernel, _ := node.MustExec("uname -r")
	return fmt.Sprintf("%d vCPU host (%s), VM: qemu TCG, 2 vCPU, 4 GiB, Debian kernel %s", runtime.NumCPU(), CPUModel(), strings.TrimSpace(kernel))
}

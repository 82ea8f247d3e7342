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

// The NodePort range of the benchmarks' apiserver: room for 15,000 NodePorts, the half of
// 30,000 Services the workload makes.
const (
	NodePortMin = 20000
	NodePortMax = 59999
)

// StartControlPlane starts the benchmarks' control plane: the NodePort range above, a
// service range with room for 100,000 ClusterIPs (a /12: the e2e's /16 holds 65,534),
// and room for the loader's parallel requests.
func StartControlPlane() (*harness.ControlPlane, error) {
	return harness.StartControlPlane(fmt.Sprintf("--service-node-port-range=%d-%d", NodePortMin, NodePortMax),
		"--service-cluster-ip-range=10.96.0.0/12,fd00:96::/112", "--max-requests-inflight=1000")
}

// LoadVia is the etcd URL a Workload writes to (Workload.Etcd), or "" with
// BENCH_LOAD=api, which loads every Service through the apiserver.
func LoadVia(cp *harness.ControlPlane) string {
	if Env("BENCH_LOAD", "etcd") == "api" {
		return ""
	}
	return cp.EtcdURL
}

// StartNode starts a control plane for the benchmarks (a NodePort range wide enough for
// 15,000 NodePorts, the half of 30,000 Services the workload makes, and room for the
// loader's parallel requests), applies deploy/ and boots a 4 GiB node that runs no proxy
// until one is started. stop stops both.
func StartNode(ctx context.Context) (cp *harness.ControlPlane, node *harness.Node, stop func(), err error) {
	cp, err = StartControlPlane()
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

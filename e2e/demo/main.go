// Command demo is `make demo`: a local kube-apiserver, one real-kernel node VM running
// ipvs-proxier as deploy/ runs it (as a process, with the DaemonSet's command, files and
// token; no kubelet), and the example workload; it shows the node's IPVS table and live
// requests, then stays up until Ctrl-C or `make demo-down`, with a kubeconfig for
// kubectl, the node's shell (`make demo-exec CMD=...`, which is `demo exec CMD`) and the
// daemon's health and metrics ports forwarded to the host.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "exec" {
		os.Exit(execOnNode(os.Args[2]))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func run() error {
	ctx := context.Background()
	pidFile := filepath.Join(harness.Cache(), "demo.pid")
	if err := os.MkdirAll(harness.Cache(), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(pidFile, []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
		return err
	}
	defer os.Remove(pidFile)

	step("building kube-apiserver and etcd %s (cached after the first run), starting them on loopback", harness.KubeVersion)
	cp, err := harness.StartControlPlane()
	if err != nil {
		return err
	}
	defer cp.Stop()
	step("applying deploy/ (ServiceAccount, RBAC, ConfigMap, DaemonSet)")
	dep, err := cp.ApplyDeploy(ctx)
	if err != nil {
		return err
	}
	step("booting node-1: a Debian kernel under qemu running ipvs-proxier with the DaemonSet's command and token")
	node, err := cp.StartNodeWith(ctx, "node-1", dep, harness.NodeOptions{Forward: map[int]int{10256: 10256, 10249: 10249}})
	if err != nil {
		return err
	}
	defer node.Stop()
	step("making pods pod1 (10.244.0.11) and pod2 (10.244.0.12), and an outside client (192.168.50.2)")
	for _, p := range [][2]string{{"pod1", "10.244.0.11"}, {"pod2", "10.244.0.12"}} {
		if err := node.AddPod(p[0], p[1]); err != nil {
			return err
		}
	}
	if err := node.AddClient("client", "192.168.50.2", "192.168.50.1"); err != nil {
		return err
	}
	example := filepath.Join(harness.RepoRoot(), "examples/demo.yaml")
	step("applying %s", example)
	if err := cp.ApplyFile(ctx, example); err != nil {
		return err
	}
	if err := show(node); err != nil {
		return err
	}
	st, err := writeState(cp, node, cp.Bins)
	defer os.Remove(filepath.Join(stateDir(), "state.json"))
	if err != nil {
		return err
	}
	step("up: the apiserver is at %s; Ctrl-C or `make demo-down` stops it. Try:", cp.RESTCfg.Host)
	fmt.Printf(`    export KUBECONFIG=%s
    kubectl get svc,endpointslices -A                # kubectl %s: %s
    kubectl -n default patch endpointslice web-1 --type=json -p '[{"op":"remove","path":"/endpoints/1"}]'
    make demo-exec CMD='ipvsadm -Ln'                 # the node follows: one real server left
    # (no controllers run: pods are network namespaces in the VM, so edit EndpointSlices)
    make build && bin/ipvs-proxier status --address %s
    curl -s http://%s/metrics | grep ^kubeproxy_sync
`, st.Kubeconfig, harness.KubeVersion, cp.Bins.Kubectl, st.Metrics, st.Metrics)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	step("stopping")
	return nil
}

// show prints the node's ipvsadm table once the demo's Service is programmed, then
// requests through its ClusterIP and its NodePort and who answered them.
func show(node *harness.Node) error {
	deadline := time.Now().Add(60 * time.Second)
	var table string
	for time.Now().Before(deadline) {
		table, _ = node.MustExec("ipvsadm -Ln")
		if strings.Contains(table, "10.96.100.10:80") && strings.Contains(table, "10.244.0.12:80") {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	step("node-1: ipvsadm -Ln")
	fmt.Print(table)
	for _, target := range []string{"10.96.100.10:80", harness.NodeIP + ":30080"} {
		kind := map[bool]string{true: "ClusterIP", false: "NodePort"}[strings.HasPrefix(target, "10.96.")]
		step("requests from the client netns through the %s %s", kind, target)
		for range 4 {
			a, err := node.Ask("client", "tcp", target)
			if err != nil {
				return fmt.Errorf("request to %s: %w", target, err)
			}
			fmt.Printf("    answered by %s\n", a)
		}
	}
	return nil
}

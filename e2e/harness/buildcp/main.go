// Command buildcp builds the control-plane binaries into the cache, and with -kubelet
// the kubelet tier's too.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

func main() {
	kubelet := flag.Bool("kubelet", false, "also build kube-controller-manager, kube-scheduler and kubelet")
	flag.Parse()
	b, err := harness.BuildControlPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(b.APIServer, b.Etcd, b.KubeProxy, b.Kubectl)
	if *kubelet {
		k, err := harness.BuildKubeletTier()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(k.ControllerManager, k.Scheduler, k.Kubelet)
	}
}

// Command buildcp builds the Kubernetes binaries the e2e tiers run into the cache: the
// control plane, kubectl and kube-router, with -kubeadm kubeadm, with -kubelet the
// kubelet tier's, with -skew the older apiservers and their etcd (`make e2e-skew`).
// `make test` starts it niced before lint (make prebuild), so that the builds use the
// CPU the earlier tiers leave idle; the tests wait on the cache's lock for a binary
// still being built.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

func main() {
	kubeadm := flag.Bool("kubeadm", false, "also build kubeadm")
	kubelet := flag.Bool("kubelet", false, "also build kube-controller-manager, kube-scheduler and kubelet")
	skew := flag.Bool("skew", false, "also build kube-apiserver and etcd of every version in harness.SkewMinors")
	flag.Parse()
	b, err := harness.BuildControlPlane()
	check(err)
	fmt.Println(b.APIServer, b.Etcd, b.KubeProxy, b.Kubectl, b.KubeRouter)
	if *kubeadm {
		k, err := harness.BuildKubeadm()
		check(err)
		fmt.Println(k)
	}
	if *kubelet {
		k, err := harness.BuildKubeletTier()
		check(err)
		fmt.Println(k.ControllerManager, k.Scheduler, k.Kubelet)
	}
	if *skew {
		for _, minor := range harness.SkewMinors {
			b, err := harness.BuildAPIServerAt(minor)
			check(err)
			fmt.Println(b.APIServer, b.Etcd)
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

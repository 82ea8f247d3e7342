package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeletTierControllers are the controllers a DaemonSet on a kubelet needs: the
// DaemonSet controller, ServiceAccounts and their tokens, the kube-root-ca.crt
// ConfigMap that every projected ServiceAccount volume reads, and the garbage collector
// (a deleted DaemonSet's pods go through it: `kubectl delete -k`). No endpoint controllers:
// the tests write their Services' EndpointSlices themselves, as the process-level suite does.
var kubeletTierControllers = []string{"daemonset-controller", "serviceaccount-controller",
	"serviceaccount-token-controller", "root-ca-certificate-publisher-controller", "garbage-collector-controller"}

// StartControllers starts kube-controller-manager and kube-scheduler against the
// apiserver, with the admin credentials, and waits until the root CA ConfigMap is
// published (the first thing a pod's ServiceAccount volume needs).
func (cp *ControlPlane) StartControllers(kb KubeletBinaries) error {
	return cp.StartControllersWith(kb, kubeletTierControllers)
}

// StartControllersWith is StartControllers with these controllers and extra
// kube-controller-manager arguments.
func (cp *ControlPlane) StartControllersWith(kb KubeletBinaries, controllers []string, extraArgs ...string) error {
	kubeconfig := filepath.Join(cp.Dir, "admin.kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	ports := make([]int, 2)
	for i := range ports {
		var err error
		if ports[i], err = FreePort(); err != nil {
			return err
		}
	}
	Logf("starting kube-controller-manager (%s) and kube-scheduler", strings.Join(controllers, ","))
	if err := cp.start(filepath.Join(cp.Dir, "controller-manager.log"), kb.ControllerManager, append([]string{
		"--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
		"--leader-elect=false", "--controllers", strings.Join(controllers, ","),
		"--root-ca-file", cp.CACert, "--service-account-private-key-file", cp.saKey,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(ports[0])}, extraArgs...)...); err != nil {
		return err
	}
	if err := cp.start(filepath.Join(cp.Dir, "scheduler.log"), kb.Scheduler,
		"--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(ports[1])); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		if _, err := cp.Admin.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("kube-controller-manager published no kube-root-ca.crt (log: %s)", filepath.Join(cp.Dir, "controller-manager.log"))
		}
		time.Sleep(time.Second)
	}
}

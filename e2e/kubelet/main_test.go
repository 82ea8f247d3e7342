// Package kubelet is the e2e kubelet tier: ipvs-proxier from its image, as deploy/ runs
// it, under a real kubelet (containerd and runc from Debian) on a real-kernel node VM,
// with kube-controller-manager and kube-scheduler beside the apiserver.
package kubelet

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

var (
	cp   *harness.ControlPlane
	node *harness.KubeletNode
	bins harness.Binaries
	// kubeconfig is the admin kubeconfig the tests' kubectl uses.
	kubeconfig string
)

func TestMain(m *testing.M) { harness.Main(m, "e2e kubelet tier", run) }

func run(m *testing.M) (int, error) {
	start := time.Now()
	var err error
	kb, err := harness.BuildKubeletTier()
	if err != nil {
		return 0, err
	}
	if cp, err = harness.StartControlPlane(); err != nil {
		return 0, err
	}
	defer cp.Stop()
	bins = cp.Bins
	if err := cp.StartControllers(kb); err != nil {
		return 0, err
	}
	kubeconfig = filepath.Join(cp.Dir, "admin.kubeconfig")
	if err := kubernetesEndpoints(); err != nil {
		return 0, err
	}
	images, err := harness.BuildImages(cp.Dir, bins)
	if err != nil {
		return 0, err
	}
	if node, err = cp.StartKubeletNode("node-1", kb, images); err != nil {
		return 0, err
	}
	defer node.Stop()
	if err := waitFor(6*time.Minute, func() bool {
		_, err := cp.Admin.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
		return err == nil
	}); err != nil {
		out, _ := node.MustExec("tail -30 /var/log/kubelet.log; tail -10 /var/log/containerd.log; cat /var/log/import.log")
		return 0, fmt.Errorf("the kubelet never registered node-1: %w\n%s", err, out)
	}
	harness.Logf("kubelet tier up in %v (node-1 registered)", time.Since(start).Round(time.Second))
	code := m.Run()
	if code != 0 {
		out, _ := node.MustExec("tail -40 /var/log/kubelet.log; tail -40 /var/log/pods/kube-system_*/*/*.log")
		fmt.Println("node logs:\n" + out)
	}
	return code, nil
}

func kubernetesEndpoints() error {
	_, err := cp.Admin.DiscoveryV1().EndpointSlices("default").Create(context.Background(), harness.KubernetesEndpointSlice(), metav1.CreateOptions{})
	return err
}

func waitFor(d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", d)
		}
		time.Sleep(time.Second)
	}
	return nil
}

// createService makes a selector-less ClusterIP Service on port 80 with one
// EndpointSlice of the given pod addresses on node-1.
func createService(t *testing.T, name string, ips ...string) *v1.Service {
	t.Helper()
	ctx := context.Background()
	svc, err := cp.Admin.CoreV1().Services("default").Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "p", Port: 80, Protocol: v1.ProtocolTCP}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var eps []harness.Endpoint
	for _, ip := range ips {
		eps = append(eps, harness.Endpoint{IP: ip, Node: "node-1"})
	}
	sl := harness.ReadySlice(name, name+"-1", 80, v1.ProtocolTCP, eps...)
	if _, err := cp.Admin.DiscoveryV1().EndpointSlices("default").Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return svc
}

// addPods makes the test's pods on the node again (network namespaces with the agent
// serving; the node has no CNI) and the SNAT a CNI gives pod traffic that leaves the
// pod network (Calico's natOutgoing), so a pod reaches the apiserver's address.
func addPods(t *testing.T) {
	t.Helper()
	for _, p := range [][2]string{{"pod1", "10.244.0.11"}, {"pod2", "10.244.0.12"}, {"pod3", "10.244.0.13"}} {
		if err := node.AddPod(p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := node.MustExec("iptables -t nat -A POSTROUTING -s 10.244.0.0/16 -o eth0 -j MASQUERADE"); err != nil {
		t.Fatal(err)
	}
}

// daemonPod returns the DaemonSet's pod on node-1 (the newest, if two exist).
func daemonPod(t *testing.T) (*v1.Pod, error) {
	t.Helper()
	pods, err := cp.Admin.CoreV1().Pods("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "k8s-app=ipvs-proxier"})
	if err != nil {
		return nil, err
	}
	var newest *v1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && (newest == nil || p.CreationTimestamp.After(newest.CreationTimestamp.Time)) {
			newest = p
		}
	}
	if newest == nil {
		return nil, fmt.Errorf("no ipvs-proxier pod")
	}
	return newest, nil
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// waitPodReady waits until the DaemonSet's pod on the node is Ready (the kubelet's
// probes passed) and returns it.
func waitPodReady(t *testing.T, d time.Duration, ok func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var p *v1.Pod
	var err error
	if werr := waitFor(d, func() bool {
		p, err = daemonPod(t)
		return err == nil && podReady(p) && (ok == nil || ok(p))
	}); werr != nil {
		out, _ := node.MustExec("tail -20 /var/log/kubelet.log; tail -20 /var/log/pods/kube-system_*/*/*.log")
		t.Fatalf("the ipvs-proxier pod is not Ready: %v %v\n%s\nnode:\n%s", werr, err, podStatus(p), out)
	}
	return p
}

func podStatus(p *v1.Pod) string {
	if p == nil {
		return "(no pod)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s phase %s node %q\n", p.Name, p.Status.Phase, p.Spec.NodeName)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s\n", c.Type, c.Status, c.Message)
	}
	for _, c := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, "  container %s ready=%v restarts=%d state=%+v\n", c.Name, c.Ready, c.RestartCount, c.State)
	}
	return b.String()
}

// restarts is the daemon container's restart count.
func restarts(p *v1.Pod) int32 {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == "ipvs-proxier" {
			return c.RestartCount
		}
	}
	return -1
}

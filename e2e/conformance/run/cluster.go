package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/conformance"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// The cluster: the control plane on the host (the e2e harness's apiserver and etcd, with
// kube-controller-manager running its default controllers and node IPAM, and the
// scheduler), two kubelet node VMs joined by a link that carries the pod network.

// clusterCIDR is the pod network; node IPAM gives each node a /24 of it.
const clusterCIDR = "10.244.0.0/16"

// nodeSpec is one node VM.
type nodeSpec struct {
	name, ip, mac string
}

var nodeSpecs = []nodeSpec{{"node-1", "192.168.100.11", "52:54:00:00:02:01"}, {"node-2", "192.168.100.12", "52:54:00:00:02:02"}}

// cluster is the running cluster.
type cluster struct {
	cp         *harness.ControlPlane
	kb         harness.KubeletBinaries
	proxy      *conformance.KubeletProxy
	nodes      []*harness.KubeletNode
	kubeconfig string
	linkPort   int
}

// startCluster starts the control plane and the nodes with these image archives on
// their disks, and waits until both nodes are Ready on the pod network.
func startCluster(images []string) (*cluster, error) {
	c := &cluster{}
	var err error
	if c.kb, err = harness.BuildKubeletTier(); err != nil {
		return nil, err
	}
	sockDir, err := os.MkdirTemp("", "conformance-egress-")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(sockDir, "kubelets.sock")
	if c.proxy, err = conformance.NewKubeletProxy(sock); err != nil {
		return nil, err
	}
	egress := filepath.Join(sockDir, "egress-selector.yaml")
	if err := os.WriteFile(egress, []byte(conformance.EgressSelectorConfig(sock)), 0o644); err != nil {
		return nil, err
	}
	if c.cp, err = harness.StartControlPlane("--egress-selector-config-file", egress); err != nil {
		c.stop()
		return nil, err
	}
	// Every controller kube-controller-manager runs by default (endpoints, endpoint
	// slices and their mirroring, replication, deployments, jobs, namespaces, garbage
	// collection, node lifecycle, service accounts...), and node IPAM for the podCIDRs.
	if err := c.cp.StartControllersWith(c.kb, []string{"*"}, "--allocate-node-cidrs", "--cluster-cidr", clusterCIDR,
		"--node-cidr-mask-size", "24", "--service-cluster-ip-range", "10.96.0.0/16"); err != nil {
		c.stop()
		return nil, err
	}
	c.kubeconfig = filepath.Join(c.cp.Dir, "admin.kubeconfig")
	if _, err := c.cp.Admin.DiscoveryV1().EndpointSlices("default").Create(context.Background(), harness.KubernetesEndpointSlice(), metav1.CreateOptions{}); err != nil {
		c.stop()
		return nil, err
	}
	linkPort, err := harness.FreePort()
	if err != nil {
		c.stop()
		return nil, err
	}
	c.linkPort = linkPort
	for i, ns := range nodeSpecs {
		link := &harness.Link{Port: linkPort, Listen: i == 0, IP: ns.ip, MAC: ns.mac}
		n, err := c.cp.StartKubeletNodeWith(ns.name, c.kb, images, harness.KubeletNodeOptions{Link: link, MemoryMB: 3072,
			ClusterDNS: conformance.DNSServiceIP, LocalStorageIsolation: true})
		if err != nil {
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
		c.proxy.Route(n.KubeletPort, 10250, ns.name, ns.ip)
		if i == 0 {
			// The second node's qemu connects to the first one's socket.
			if err := harness.WaitListening(linkPort, 5*time.Minute); err != nil {
				c.stop()
				return nil, fmt.Errorf("node-1 link: %w", err)
			}
		}
	}
	if err := c.podNetwork(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// podNetwork waits until node IPAM has given each node its podCIDR, sets the pod
// network up on every node, and waits until the nodes are Ready.
func (c *cluster) podNetwork() error {
	ctx := context.Background()
	cidrs := map[string]string{}
	if err := waitFor(8*time.Minute, func() bool {
		for _, ns := range nodeSpecs {
			n, err := c.cp.Admin.CoreV1().Nodes().Get(ctx, ns.name, metav1.GetOptions{})
			if err != nil || n.Spec.PodCIDR == "" {
				return false
			}
			cidrs[ns.name] = n.Spec.PodCIDR
		}
		return true
	}); err != nil {
		return fmt.Errorf("the nodes registered with no podCIDR (%v): %w\n%s", cidrs, err, c.nodeLogs())
	}
	for i, ns := range nodeSpecs {
		pn := conformance.PodNetwork{PodCIDR: cidrs[ns.name], ClusterCIDR: clusterCIDR, Peers: map[string]string{}}
		for _, peer := range nodeSpecs {
			if peer.name != ns.name {
				pn.Peers[cidrs[peer.name]] = peer.ip
			}
		}
		script, err := pn.Script()
		if err != nil {
			return err
		}
		// The apiserver's connections to this node's pods go through its agent.
		c.proxy.RoutePods(netip.MustParsePrefix(cidrs[ns.name]), strings.TrimPrefix(c.nodes[i].AgentURL(), "http://"))
		if out, err := c.nodes[i].MustExec(script); err != nil {
			return fmt.Errorf("pod network on %s: %w\n%s", ns.name, err, out)
		}
	}
	// One zone per node: the topology-aware tests look for two.
	for i, ns := range nodeSpecs {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"topology.kubernetes.io/zone":"zone-%c"}}}`, 'a'+i)
		if _, err := c.cp.Admin.CoreV1().Nodes().Patch(ctx, ns.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	harness.Logf("pod network: %v", cidrs)
	return c.waitNodesReady(8 * time.Minute)
}

// waitNodesReady waits until every node's Ready condition is True.
func (c *cluster) waitNodesReady(d time.Duration) error {
	ctx := context.Background()
	if err := waitFor(d, func() bool {
		for _, ns := range nodeSpecs {
			n, err := c.cp.Admin.CoreV1().Nodes().Get(ctx, ns.name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			ready := false
			for _, cond := range n.Status.Conditions {
				if cond.Type == "Ready" && cond.Status == "True" {
					ready = true
				}
			}
			if !ready {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("nodes not Ready: %w\n%s", err, c.nodeLogs())
	}
	return nil
}

// reboot power-cycles every node (the proxy's kernel state, routes and rules go; the
// disk with its images stays) and sets the pod network up again.
func (c *cluster) reboot() error {
	for _, n := range c.nodes {
		n.PowerOff()
	}
	for i, n := range c.nodes {
		if err := n.Boot(); err != nil {
			return err
		}
		if i == 0 {
			if err := harness.WaitListening(c.linkPort, 5*time.Minute); err != nil {
				return err
			}
		}
	}
	return c.podNetwork()
}

// nodeLogs is the end of each node's kubelet and containerd logs.
func (c *cluster) nodeLogs() string {
	var b strings.Builder
	for _, n := range c.nodes {
		out, _ := n.MustExec("tail -25 /var/log/kubelet.log; tail -8 /var/log/containerd.log")
		fmt.Fprintf(&b, "--- %s\n%s\n", n.Name, out)
	}
	return b.String()
}

func (c *cluster) stop() {
	for _, n := range c.nodes {
		n.Stop()
	}
	if c.cp != nil {
		c.cp.Stop()
	}
	if c.proxy != nil {
		_ = c.proxy.Close()
	}
}

func waitFor(d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", d)
		}
		time.Sleep(2 * time.Second)
	}
	return nil
}

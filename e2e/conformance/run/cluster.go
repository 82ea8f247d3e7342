package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/conformance"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// The cluster: the control plane on the host (the e2e harness's apiserver and etcd, with
// kube-controller-manager running its default controllers and node IPAM, and the
// scheduler), the shape's kubelet node VMs joined by a link that carries the pod network.

// nodeSpec is one node VM: its name, its link address of each family (the primary
// first), its MAC on the link.
type nodeSpec struct {
	name string
	ips  []string
	mac  string
}

// nodeSpecs are the shape's node VMs.
func nodeSpecs(shape conformance.Shape) []nodeSpec {
	var out []nodeSpec
	for i := range shape.Nodes {
		ns := nodeSpec{name: fmt.Sprintf("node-%d", i+1), mac: fmt.Sprintf("52:54:00:00:02:%02x", i+1)}
		for _, f := range shape.Families {
			ns.ips = append(ns.ips, f.NodeIP(i))
		}
		out = append(out, ns)
	}
	return out
}

// linkIPs are the node's link addresses by family, for harness.Link.
func (ns nodeSpec) linkIPs() (v4, v6 string) {
	for _, ip := range ns.ips {
		if strings.Contains(ip, ":") {
			v6 = ip
		} else {
			v4 = ip
		}
	}
	return v4, v6
}

// cluster is the running cluster.
type cluster struct {
	shape      conformance.Shape
	specs      []nodeSpec
	cp         *harness.ControlPlane
	kb         harness.KubeletBinaries
	proxy      *conformance.KubeletProxy
	nodes      []*harness.KubeletNode
	kubeconfig string
	linkPort   int
}

// startCluster starts the control plane and the shape's nodes with these image
// archives on their disks, and waits until every node is Ready on the pod network.
func startCluster(images []string, shape conformance.Shape) (*cluster, error) {
	c := &cluster{shape: shape, specs: nodeSpecs(shape)}
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
	// The apiserver's Service range with the shape's primary family first (the harness's
	// own is IPv4 first; the last --service-cluster-ip-range given wins).
	if c.cp, err = harness.StartControlPlane("--egress-selector-config-file", egress, "--service-cluster-ip-range", shape.ServiceCIDRs()); err != nil {
		c.stop()
		return nil, err
	}
	// Every controller kube-controller-manager runs by default (endpoints, endpoint
	// slices and their mirroring, replication, deployments, jobs, namespaces, garbage
	// collection, node lifecycle, service accounts...), and node IPAM for the podCIDRs.
	if err := c.cp.StartControllersWith(c.kb, []string{"*"}, shape.ControllerArgs()...); err != nil {
		c.stop()
		return nil, err
	}
	c.kubeconfig = filepath.Join(c.cp.Dir, "admin.kubeconfig")
	// The `kubernetes` Service is of the primary family; on IPv6 its endpoint is the relay
	// every node runs (conformance.APIServerRelay).
	kube := harness.KubernetesEndpointSlice()
	if shape.Primary().Name == conformance.IPv6.Name {
		kube.AddressType = discovery.AddressTypeIPv6
		kube.Endpoints[0].Addresses = []string{conformance.IPv6.APIServer}
	}
	if _, err := c.cp.Admin.DiscoveryV1().EndpointSlices("default").Create(context.Background(), kube, metav1.CreateOptions{}); err != nil {
		c.stop()
		return nil, err
	}
	linkPort, err := harness.FreePort()
	if err != nil {
		c.stop()
		return nil, err
	}
	c.linkPort = linkPort
	for i, ns := range c.specs {
		v4, v6 := ns.linkIPs()
		link := &harness.Link{Port: linkPort, Listen: i == 0, IP: v4, IP6: v6, MAC: ns.mac}
		n, err := c.cp.StartKubeletNodeWith(ns.name, c.kb, images, harness.KubeletNodeOptions{Link: link, MemoryMB: 3072,
			ClusterDNS: shape.Primary().DNSServiceIP, LocalStorageIsolation: true, NodeIPs: shape.NodeIPs(i)})
		if err != nil {
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
		for _, ip := range ns.ips {
			c.proxy.Route(n.KubeletPort, 10250, ns.name, ip)
		}
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
	cidrs := map[string][]string{}
	if err := waitFor(8*time.Minute, func() bool {
		for _, ns := range c.specs {
			n, err := c.cp.Admin.CoreV1().Nodes().Get(ctx, ns.name, metav1.GetOptions{})
			if err != nil || len(n.Spec.PodCIDRs) != len(c.shape.Families) {
				return false
			}
			cidrs[ns.name] = n.Spec.PodCIDRs
		}
		return true
	}); err != nil {
		return fmt.Errorf("the nodes registered without a podCIDR per family (%v): %w\n%s", cidrs, err, c.nodeLogs())
	}
	for i, ns := range c.specs {
		pn := conformance.PodNetwork{PodCIDRs: cidrs[ns.name], ClusterCIDRs: strings.Split(c.shape.ClusterCIDRs(), ","), Peers: map[string]string{}}
		for _, peer := range c.specs {
			if peer.name != ns.name {
				// Node IPAM allocates each node's podCIDRs in the cluster CIDRs' order,
				// which is the order of the node's link addresses.
				for j, pc := range cidrs[peer.name] {
					pn.Peers[pc] = peer.ips[j]
				}
			}
		}
		script, err := pn.Script()
		if err != nil {
			return err
		}
		if c.shape.Primary().Name == conformance.IPv6.Name {
			script += conformance.APIServerRelay(6443)
		}
		// The apiserver's connections to this node's pods go through its agent.
		for _, pc := range cidrs[ns.name] {
			c.proxy.RoutePods(netip.MustParsePrefix(pc), strings.TrimPrefix(c.nodes[i].AgentURL(), "http://"))
		}
		if out, err := c.nodes[i].MustExec(script); err != nil {
			return fmt.Errorf("pod network on %s: %w\n%s", ns.name, err, out)
		}
	}
	// One zone per node: the topology-aware tests look for two, Traffic Distribution's
	// for three.
	for i, ns := range c.specs {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"topology.kubernetes.io/zone":%q}}}`, conformance.Zone(i))
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
		for _, ns := range c.specs {
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

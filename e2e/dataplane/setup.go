package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

const (
	nodeName = benchkit.NodeName
	// workloadNode is where the workload's endpoints are, not this node: with all
	// 120,000 of 30,000 Services' endpoints local, kube-proxy's KUBE-LOOP-BACK (the
	// node's own endpoints, for hairpin masquerade) overflows its fixed maxelem of
	// 65,536 and its IPVS mode cannot be measured whole; in a cluster of that size most
	// endpoints are on other nodes. The measured Services' pods stay on this node.
	workloadNode = "bench-elsewhere"
	// ns holds the measured Services, apart from the workload's.
	ns = "dataplane"
	// client is the netns the requests come from: outside the cluster, as a user.
	client = "client"
	// hairpinPod is the pod that reaches itself through its own Services.
	hairpinPod, hairpinIP = "hp", "10.244.0.30"
	// The bench pods' ports (agent httpd).
	httpPort, sinkPort = 8080, 5201
)

// webPods serve the measured ClusterIP.
var webPods = [][2]string{{"web1", "10.244.0.21"}, {"web2", "10.244.0.22"}, {"web3", "10.244.0.23"}, {"web4", "10.244.0.24"}}

// targets are what the loads aim at.
type targets struct {
	// web is the measured ClusterIP:80 over the four web pods.
	web string
	// pods are the four web pods' HOST:PORT, comma-separated: the baseline's targets.
	pods string
	// hairpin are the hairpin pod's own sink: directly, and through its Services.
	hairpin []hairpinTarget
}

type hairpinTarget struct{ name, addr string }

// The hairpin paths, in the report's order.
const (
	hpDirect       = "pod IP (no proxy)"
	hpClusterIP    = "ClusterIP"
	hpNodePort     = "NodePort, ETP Cluster"
	hpNodePortETPL = "NodePort, ETP Local"
)

// setUp makes the pods and the client in the VM and the measured Services in the
// apiserver; the proxies program them with the workload's.
func setUp(ctx context.Context, cp *harness.ControlPlane, node *harness.Node) (targets, error) {
	var t targets
	for _, p := range append(webPods, [2]string{hairpinPod, hairpinIP}) {
		if err := node.AddPodRunning(p[0], p[1], "/agent httpd "+p[0]); err != nil {
			return t, err
		}
	}
	if err := node.AddClient(client, "192.168.50.2", "192.168.50.1"); err != nil {
		return t, err
	}
	// A new connection per request: the client's ports must outlast a 30 s run at a
	// few thousand per second.
	if _, err := node.MustExec("ip netns exec " + client + " sysctl -w net.ipv4.ip_local_port_range='1024 65000'"); err != nil {
		return t, err
	}
	if _, err := cp.Admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return t, err
	}
	var eps []harness.Endpoint
	var pods []string
	for _, p := range webPods {
		eps = append(eps, harness.Endpoint{IP: p[1], Node: nodeName})
		pods = append(pods, net.JoinHostPort(p[1], strconv.Itoa(httpPort)))
	}
	t.pods = strings.Join(pods, ",")
	web, err := create(ctx, cp, "web", v1.ServiceSpec{}, 80, httpPort, eps)
	if err != nil {
		return t, err
	}
	t.web = net.JoinHostPort(web.Spec.ClusterIP, "80")
	hp := []harness.Endpoint{{IP: hairpinIP, Node: nodeName}}
	cluster, err := create(ctx, cp, "hp-cluster", v1.ServiceSpec{Type: v1.ServiceTypeNodePort}, sinkPort, sinkPort, hp)
	if err != nil {
		return t, err
	}
	local, err := create(ctx, cp, "hp-local", v1.ServiceSpec{Type: v1.ServiceTypeNodePort,
		ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal}, sinkPort, sinkPort, hp)
	if err != nil {
		return t, err
	}
	nodePort := func(s *v1.Service) string {
		return net.JoinHostPort(harness.NodeIP, strconv.Itoa(int(s.Spec.Ports[0].NodePort)))
	}
	t.hairpin = []hairpinTarget{
		{hpDirect, net.JoinHostPort(hairpinIP, strconv.Itoa(sinkPort))},
		{hpClusterIP, net.JoinHostPort(cluster.Spec.ClusterIP, strconv.Itoa(sinkPort))},
		{hpNodePort, nodePort(cluster)},
		{hpNodePortETPL, nodePort(local)},
	}
	return t, nil
}

// create makes a Service in ns with one TCP port and its EndpointSlice of ready eps.
func create(ctx context.Context, cp *harness.ControlPlane, name string, spec v1.ServiceSpec, port, target int32, eps []harness.Endpoint) (*v1.Service, error) {
	spec.Ports = []v1.ServicePort{{Name: "p", Port: port, Protocol: v1.ProtocolTCP}}
	svc, err := cp.Admin.CoreV1().Services(ns).Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", name, err)
	}
	sl := harness.ReadySlice(name, name+"-1", target, v1.ProtocolTCP, eps...)
	sl.Namespace = ns
	if _, err := cp.Admin.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("slice %s: %w", name, err)
	}
	return svc, nil
}

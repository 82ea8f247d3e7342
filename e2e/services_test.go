package e2e

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// podEP is an endpoint of a test Service: a pod's address and the node it runs on.
type podEP struct{ ip, node string }

// service builds the Service a test creates with createService: its name and, if given,
// its spec (createService adds one port when the spec has none).
func service(name string, spec ...v1.ServiceSpec) *v1.Service {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if len(spec) > 0 {
		svc.Spec = spec[0]
	}
	return svc
}

// createProgrammed creates the Service as createService does and waits until node-1's
// IPVS table has its ClusterIP virtual server with every endpoint. It returns the
// Service and its ClusterIP:port.
func createProgrammed(t *testing.T, svc *v1.Service, port int32, proto v1.Protocol, eps ...podEP) (*v1.Service, string) {
	t.Helper()
	got := createService(t, svc, port, proto, eps...)
	vip := net.JoinHostPort(got.Spec.ClusterIP, strconv.Itoa(int(port)))
	waitIPVS(t, svc.Name+" programmed", func(s string) bool {
		if !strings.Contains(s, " "+vip+" ") {
			return false
		}
		block := vsBlock(s, vip)
		for _, e := range eps {
			if !strings.Contains(block, " "+net.JoinHostPort(e.ip, strconv.Itoa(int(port)))+" ") {
				return false
			}
		}
		return true
	})
	return got, vip
}

// createService creates svc in the default namespace with one port (unless its spec has
// ports) and its one EndpointSlice, and deletes both when the test ends.
func createService(t *testing.T, svc *v1.Service, port int32, proto v1.Protocol, eps ...podEP) *v1.Service {
	t.Helper()
	ctx := context.Background()
	svc.Namespace = "default"
	if len(svc.Spec.Ports) == 0 {
		svc.Spec.Ports = []v1.ServicePort{{Name: "p", Port: port, Protocol: proto}}
	}
	got, err := cp.Admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.CoreV1().Services("default").Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
		_ = cp.Admin.DiscoveryV1().EndpointSlices("default").Delete(context.Background(), svc.Name+"-1", metav1.DeleteOptions{})
	})
	setEndpoints(t, svc.Name, port, proto, eps...)
	return got
}

// setEndpoints writes the Service's one EndpointSlice (no controller-manager runs here).
func setEndpoints(t *testing.T, svcName string, port int32, proto v1.Protocol, eps ...podEP) {
	t.Helper()
	// The annotation the EndpointSlice controller sets; the daemon's
	// network-programming latency metric starts from it.
	sl := harness.ReadySlice(svcName, svcName+"-1", port, proto, endpoints(eps)...)
	sl.Annotations = map[string]string{v1.EndpointsLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}
	writeSlice(t, sl)
}

// writeSlice creates the EndpointSlice, or updates it when it exists.
func writeSlice(t *testing.T, sl *discovery.EndpointSlice) {
	t.Helper()
	ctx := context.Background()
	cur, err := cp.Admin.DiscoveryV1().EndpointSlices("default").Get(ctx, sl.Name, metav1.GetOptions{})
	if err == nil {
		sl.ResourceVersion = cur.ResourceVersion
		_, err = cp.Admin.DiscoveryV1().EndpointSlices("default").Update(ctx, sl, metav1.UpdateOptions{})
	} else {
		_, err = cp.Admin.DiscoveryV1().EndpointSlices("default").Create(ctx, sl, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// setLBIngress writes ip as the Service's LoadBalancer ingress, as a cloud controller would.
func setLBIngress(t *testing.T, svc *v1.Service, ip string) {
	t.Helper()
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: ip}}
	if _, err := cp.Admin.CoreV1().Services("default").UpdateStatus(context.Background(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// endpoints converts the test's endpoints for the harness.
func endpoints(eps []podEP) []harness.Endpoint {
	out := make([]harness.Endpoint, len(eps))
	for i, e := range eps {
		out[i] = harness.Endpoint{IP: e.ip, Node: e.node}
	}
	return out
}

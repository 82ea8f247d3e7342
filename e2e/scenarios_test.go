package e2e

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodePort: a NodePort reached from an "external" netns; with ETP=Local the pod
// sees the client's own address.
func TestNodePort(t *testing.T) {
	requireEnv(t)
	for _, local := range []bool{false, true} {
		name := map[bool]string{false: "np-cluster", true: "np-local"}[local]
		t.Run(name, func(t *testing.T) {
			svc := service(name, v1.ServiceSpec{Type: v1.ServiceTypeNodePort})
			if local {
				svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
			}
			got := createService(t, svc, 80, v1.ProtocolTCP, podEP{"10.244.0.13", "node-1"})
			target := "10.0.2.15:" + itoa(got.Spec.Ports[0].NodePort)
			waitIPVS(t, "NodePort virtual server", func(s string) bool {
				return strings.Contains(s, "TCP  "+target) && strings.Contains(s, "10.244.0.13:80")
			})
			a, err := node.Ask("client", "tcp", target)
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(a)
			if f[0] != "pod3" || local != strings.HasPrefix(f[1], "192.168.50.2:") {
				t.Errorf("answer %q (local=%v: the client address must be kept exactly when ETP=Local)", a, local)
			}
		})
	}
}

// TestServiceDeletion: the virtual server, the dummy address and the ipset entries go.
func TestServiceDeletion(t *testing.T) {
	requireEnv(t)
	svc := createService(t, service("doomed"), 8080, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	vip := svc.Spec.ClusterIP
	waitIPVS(t, "created", func(s string) bool { return strings.Contains(s, vip+":8080") })
	check := func() string {
		out, _ := node.MustExec("ip addr show kube-ipvs0; " + setList("KUBE-CLUSTER-IP") + "; " + setList("KUBE-IPVS-IPS"))
		return out
	}
	if !strings.Contains(check(), vip) {
		t.Fatalf("address or set entries missing before deletion:\n%s", check())
	}
	if err := cp.Admin.CoreV1().Services("default").Delete(context.Background(), "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitIPVS(t, "deleted", func(s string) bool { return !strings.Contains(s, vip+":8080") })
	if err := waitFor(10*time.Second, func() bool { return !strings.Contains(check(), vip) }); err != nil {
		t.Errorf("address or ipset entries left:\n%s", check())
	}
}

// TestEndpointChurnLatency: each endpoint change shows in `ipvsadm` within
// minSyncPeriod (1 s, from deploy/) plus 1 s. The distribution is logged.
func TestEndpointChurnLatency(t *testing.T) {
	requireEnv(t)
	_, vip := createProgrammed(t, service("churn"), 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	sets := [][]podEP{
		{{"10.244.0.11", "node-1"}, {"10.244.0.12", "node-1"}},
		{{"10.244.0.12", "node-1"}},
		{{"10.244.0.12", "node-1"}, {"10.244.0.13", "node-1"}},
		{{"10.244.0.11", "node-1"}},
	}
	var lat []time.Duration
	for i := range 12 {
		want := sets[i%len(sets)]
		start := time.Now()
		setEndpoints(t, "churn", 80, v1.ProtocolTCP, want...)
		waitIPVS(t, "endpoint change", func(s string) bool {
			block := vsBlock(s, vip)
			for _, e := range []string{"10.244.0.11", "10.244.0.12", "10.244.0.13"} {
				in := slices.ContainsFunc(want, func(p podEP) bool { return p.ip == e })
				// weight-0 (draining) lines do not count as in service
				if in != strings.Contains(block, e+":80               Masq    1") {
					return false
				}
			}
			return true
		})
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("endpoint change -> ipvsadm latency over %d changes (includes one agent round trip per poll): min %v p50 %v p90 %v max %v",
		len(lat), lat[0], lat[len(lat)/2], lat[len(lat)*9/10], lat[len(lat)-1])
	if lat[len(lat)/2] > 2*time.Second {
		t.Errorf("median latency %v above minSyncPeriod + 1 s", lat[len(lat)/2])
	}
}

// vsBlock returns the lines of one virtual server in `ipvsadm -Ln` output.
func vsBlock(out, vip string) string {
	var b []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "  ->") {
			in = strings.Contains(l, " "+vip+" ")
			continue
		}
		if in {
			b = append(b, l)
		}
	}
	return strings.Join(b, "\n")
}

// TestSchedulerAnnotationAndEvent: the per-Service scheduler shows in ipvsadm; a bad
// one falls back to rr and leaves a Warning Event on the Service. kube-router's
// annotation is read as an alias of ours through the informers' cache too.
func TestSchedulerAnnotationAndEvent(t *testing.T) {
	requireEnv(t)
	good := createService(t, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "sched-sh",
		Annotations: map[string]string{"ipvs-proxier.io/scheduler": "sh"}}}, 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	bad := createService(t, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "sched-bad",
		Annotations: map[string]string{"ipvs-proxier.io/scheduler": "fastest"}}}, 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	alias := createService(t, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "sched-kube-router",
		Annotations: map[string]string{"kube-router.io/service.scheduler": "lc"}}}, 80, v1.ProtocolTCP, podEP{"10.244.0.11", "node-1"})
	waitIPVS(t, "schedulers", func(s string) bool {
		return strings.Contains(s, good.Spec.ClusterIP+":80 sh") && strings.Contains(s, bad.Spec.ClusterIP+":80 rr") &&
			strings.Contains(s, alias.Spec.ClusterIP+":80 lc")
	})
	waitWarning(t, "sched-bad", "InvalidScheduler", func(string) bool { return true })
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

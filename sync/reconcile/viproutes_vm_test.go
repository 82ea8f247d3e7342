package reconcile

import (
	"bufio"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// TestRealPacketsLocalRoutes: with the Service IPs as local routes (--vip-local-routes)
// IPVS on the real kernel serves a ClusterIP to a client netns and to the node itself,
// the dummy holds no address, and the Service's removal takes its route away.
func TestRealPacketsLocalRoutes(t *testing.T) {
	kerneltest.RequireIPVS(t)
	sh(t, `echo 1 > /proc/sys/net/ipv4/ip_forward && echo 1 > /proc/sys/net/ipv4/vs/conntrack &&
ip netns add rclient && ip link add h-rclient type veth peer name eth0 netns rclient &&
ip link set h-rclient up && ip addr add 10.0.6.1/24 dev h-rclient &&
ip netns exec rclient ip link set lo up && ip netns exec rclient ip link set eth0 up &&
ip netns exec rclient ip addr add 10.0.6.2/24 dev eth0 && ip netns exec rclient ip route add default via 10.0.6.1`)
	makePod(t, "rpod1", "10.244.6.11")

	backend := testRulesBackend()
	k := linuxKernelFor(t, backend)
	k.Addresses.(*linux.Addresses).LocalRoutes = true
	const dummy = "kube-ipvs6" // not the other tests' dummy, whose addresses route mode would convert
	t.Cleanup(func() {
		if _, err := linux.DeleteLocalRoutes(); err != nil {
			t.Error(err)
		}
		_, _ = linux.DeleteDummy(dummy)
	})
	src := source.NewStaticSource()
	tracker := source.NewTracker(nil)
	opts := Options{Config: proxier.Config{NodeName: "vm", NodeIPs: []netip.Addr{netip.MustParseAddr("10.0.6.1")},
		ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}, RulesBackend: backend, DummyDevice: dummy},
		GracefulTimeout: time.Hour}
	s := NewSyncer(opts, k, src, tracker)
	src.SetService(svc("default", "routed", "10.96.6.10", 80, v1.ProtocolTCP))
	src.SetSlice(slice("default", "routed", "routed-1", 80, v1.ProtocolTCP, "10.244.6.11"))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, "ip route show table local proto 210"); !strings.Contains(out, "local 10.96.6.10 dev lo") {
		t.Fatalf("no local route for the ClusterIP:\n%s", out)
	}
	if out := sh(t, "ip -4 addr show dev "+dummy); strings.Contains(out, "10.96.6.10") {
		t.Errorf("the ClusterIP is an address on the dummy too:\n%s", out)
	}
	if words, err := askIn(t, "rclient", "", "10.96.6.10:80"); err != nil || len(words) == 0 || words[0] != "rpod1" {
		t.Errorf("client netns through the ClusterIP: %v, %v", words, err)
	}
	if answer, err := askHere("10.96.6.10:80"); err != nil || !strings.HasPrefix(answer, "rpod1") {
		t.Errorf("the node itself through the ClusterIP: %q, %v", answer, err)
	}

	src.DeleteService(proxier.ServiceKey{Namespace: "default", Name: "routed"})
	tracker.ServiceChanged(proxier.ServiceKey{Namespace: "default", Name: "routed"})
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, "ip route show table local proto 210"); strings.Contains(out, "10.96.6.10") {
		t.Errorf("the removed Service's route stayed:\n%s", out)
	}
	if _, err := askIn(t, "rclient", "", "10.96.6.10:80"); err == nil {
		t.Error("the removed Service still answers")
	}
}

// askHere connects from the node's own namespace and returns the answer's first line.
func askHere(target string) (string, error) {
	c, err := net.DialTimeout("tcp", target, 3*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	return bufio.NewReader(c).ReadString('\n')
}

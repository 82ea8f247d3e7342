package e2e

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestAffinityPortReuseAcrossServices pins a limit of IPVS itself, which every IPVS
// proxy shares (docs/differences.md, "A limit of IPVS itself"). One client port asks a
// ClientIP-affinity Service, then another Service with the same endpoint, then the
// affinity Service again, all within IPVS's TCP TIME_WAIT (2 minutes). The third
// connect times out: IPVS reuses the affinity Service's old connection entry (a
// persistence-controlled entry is never rescheduled, ip_vs_in's is_new_conn_expected),
// and the endpoint's SYN-ACK is matched to the newer entry of the other Service
// (ip_vs_conn_out_get takes the first entry of the client's ip:port and the endpoint's),
// so it leaves from the wrong address. The same steps through two Services without
// affinity answer each time: a reused port gets a new entry there.
func TestAffinityPortReuseAcrossServices(t *testing.T) {
	requireEnv(t)
	pod2 := podEP{"10.244.0.12", "node-1"}
	_, affinity := createProgrammed(t, service("reuse-affinity", v1.ServiceSpec{SessionAffinity: v1.ServiceAffinityClientIP}), 80, v1.ProtocolTCP, pod2)
	_, other := createProgrammed(t, service("reuse-other"), 80, v1.ProtocolTCP, pod2)
	_, plain := createProgrammed(t, service("reuse-plain"), 80, v1.ProtocolTCP, pod2)
	for _, vip := range []string{affinity, other, plain} {
		waitServing(t, "pod1", "tcp", vip)
	}
	// The client asks from named ports, again and again: TIME_WAIT reuse as a busy
	// client's kernel-chosen ports get it (the agent sets SO_REUSEADDR on them).
	nodeOut(t, "ip netns exec pod1 sh -c 'echo 1 > /proc/sys/net/ipv4/tcp_tw_reuse'")
	t.Cleanup(func() { _, _ = node.MustExec("ip netns exec pod1 sh -c 'echo 2 > /proc/sys/net/ipv4/tcp_tw_reuse'") })
	ask := func(src, vip string) error {
		// tcp_tw_reuse takes a TIME_WAIT 4-tuple once its last timestamp is a second old.
		time.Sleep(1200 * time.Millisecond)
		_, err := node.AskFrom("pod1", "tcp", src, vip)
		return err
	}
	const plainPort, affinityPort = "10.244.0.11:42002", "10.244.0.11:42000"
	for i, vip := range []string{plain, other, plain} {
		if err := ask(plainPort, vip); err != nil {
			t.Fatalf("without affinity, ask %d (%s from %s): %v", i+1, vip, plainPort, err)
		}
	}
	for i, vip := range []string{affinity, other} {
		if err := ask(affinityPort, vip); err != nil {
			t.Fatalf("ask %d (%s from %s): %v", i+1, vip, affinityPort, err)
		}
	}
	err := ask(affinityPort, affinity)
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the affinity Service asked again from the port: %v; IPVS no longer misroutes the answer: update docs/differences.md", err)
	}
	t.Logf("as documented: %v\n%s", err, nodeOut(t, "ipvsadm -Lnc | grep -F ':42000 '"))
}

package main

import (
	"fmt"
	"strings"
	gosync "sync"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// The probe: when the cold start's reading of the data path says every Service port is
// programmed, real requests to a sample of the Services say whether they answer. The
// workload's endpoints are addresses nothing answers on, except the sample's: a pod
// netns holds those addresses and serves HTTP on the endpoints' port (agent httpd, 8080).
// The requests come from a client netns outside the cluster, as in `make
// bench-dataplane`; both are made by the bench in the node VM, and nothing else is sent
// to.
const (
	// probeCount is how many Services are probed, spread over the step's range.
	probeCount = 20
	// probeClient is the client netns, probeClientIP its address and probeGateway the
	// node's side of its link.
	probeClient, probeClientIP, probeGateway = "client", "192.168.50.2", "192.168.50.1"
	// probePod holds the sample's endpoint addresses.
	probePod = "probe-ep"
	// probeRetryFor is how long a probe that did not all answer is repeated, to see
	// when it does.
	probeRetryFor = time.Minute
)

// probeSample is the Services probed at a step of n: probeCount of them (all if fewer)
// evenly spread, the first and the last included.
func probeSample(n int) []int {
	k := min(n, probeCount)
	out := make([]int, 0, k)
	for j := range k {
		i := 0
		if k > 1 {
			i = j * (n - 1) / (k - 1)
		}
		out = append(out, i)
	}
	return out
}

// probeScript makes the client and the endpoints' pod (first: on a new node) and gives
// the pod the endpoint addresses addrs, each routed to it from the node; addresses
// already there are kept (a later step on the same VM).
func probeScript(first bool, addrs []string) string {
	var b strings.Builder
	if first {
		// harness.Node.AddClient and AddPodRunning, in one exec.
		fmt.Fprintf(&b, `ip netns add %[1]s && ip link add h-%[1]s type veth peer name eth0 netns %[1]s &&
ip link set h-%[1]s up && ip addr add %[3]s/24 dev h-%[1]s &&
ip netns exec %[1]s ip link set lo up && ip netns exec %[1]s ip link set eth0 up &&
ip netns exec %[1]s ip addr add %[2]s/24 dev eth0 && ip netns exec %[1]s ip route add default via %[3]s || exit 1
`, probeClient, probeClientIP, probeGateway)
		fmt.Fprintf(&b, `ip netns add %[1]s && ip link add h-%[1]s type veth peer name eth0 netns %[1]s &&
ip link set h-%[1]s up && ip addr add 169.254.1.1/32 dev h-%[1]s &&
ip netns exec %[1]s ip link set lo up && ip netns exec %[1]s ip link set eth0 up &&
ip netns exec %[1]s ip route add 169.254.1.1 dev eth0 && ip netns exec %[1]s ip route add default via 169.254.1.1 || exit 1
(/usr/sbin/ip netns exec %[1]s /agent httpd %[1]s < /dev/null > /tmp/pod-%[1]s.log 2>&1 &)
`, probePod)
	}
	for _, a := range addrs {
		fmt.Fprintf(&b, "ip netns exec %[1]s ip addr replace %[2]s/32 dev eth0 && ip route replace %[2]s/32 dev h-%[1]s || exit 1\n", probePod, a)
	}
	return b.String()
}

// setUpProbe gives the endpoints' pod the endpoint addresses of step n's sample,
// making it and the client on a new node first.
func (b *bench) setUpProbe(n int) error {
	var addrs []string
	for _, i := range probeSample(n) {
		for j := range b.w.Endpoints {
			addrs = append(addrs, benchkit.EpIP(i, j))
		}
	}
	if _, err := b.node.MustExec(probeScript(!b.probeMade, addrs)); err != nil {
		return fmt.Errorf("probe set-up: %w", err)
	}
	b.probeMade = true
	return nil
}

// probe sends one HTTP request from the client to each sampled Service's ClusterIP, all
// at once (the agent gives each 5 s), and returns how many answered and which did not.
func (b *bench) probe(n int) (sent, answered int, silent []string) {
	sample := probeSample(n)
	var mu gosync.Mutex
	var wg gosync.WaitGroup
	for _, i := range sample {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.node.Get(probeClient, "http://"+b.w.VIPs[i]+":80/")
			mu.Lock()
			defer mu.Unlock()
			if err == nil && r.Code == 200 {
				answered++
			} else {
				silent = append(silent, benchkit.SvcName(i))
			}
		}()
	}
	wg.Wait()
	return len(sample), answered, silent
}

// probeAtReady probes the sample when the cold start has said every port is
// programmed, and, if some did not answer, again every 2 s for probeRetryFor (within
// the budget) to note when they all did.
func (m *measurement) probeAtReady() {
	began := time.Now()
	sent, answered, silent := m.b.probe(m.n)
	m.r.Probed, m.r.Answered = sent, answered
	if answered == sent {
		m.note("probe at the cold start: %d of %d sampled Services answered (%.1f s)", answered, sent, time.Since(began).Seconds())
		return
	}
	m.note("probe at the cold start: only %d of %d sampled Services answered; silent: %s", answered, sent, strings.Join(silent, ", "))
	for end := began.Add(probeRetryFor); time.Now().Before(end) && time.Now().Before(m.deadline); {
		time.Sleep(2 * time.Second)
		if _, answered, _ = m.b.probe(m.n); answered == sent {
			m.note("probe: all %d answered %.1f s after the cold start said ready", sent, time.Since(began).Seconds())
			return
		}
	}
	m.note("probe: %d of %d answered %.0f s after the cold start said ready", answered, sent, time.Since(began).Seconds())
}

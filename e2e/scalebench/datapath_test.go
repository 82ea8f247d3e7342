package main

import (
	"os"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// fakeNode answers the commands it knows with a listing and an exit code; any other
// command exits 1 with nothing.
type fakeNode map[string]struct {
	out  string
	code int
}

func (f fakeNode) Exec(cmd string) (string, int, error) {
	if r, ok := f[cmd]; ok {
		return r.out, r.code, nil
	}
	return "", 1, nil
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestIPVSCounts: every virtual server is a Service port and each real server of weight
// above 0 a backend; the ClusterIP ports are those in the service range with real
// servers (not the apiserver's, which has none here, nor a NodePort on the node's
// address); a draining real server (weight 0) and a firewall-mark service are no
// ClusterIP port's backends.
func TestIPVSCounts(t *testing.T) {
	node := fakeNode{"ipvsadm -Ln": {testdata(t, "ipvsadm.txt"), 0}}
	c, err := ipvsPath{}.counts(node)
	if err != nil {
		t.Fatal(err)
	}
	if want := (portCounts{Ports: 6, Backends: 17, ClusterPorts: 4, ClusterBackends: 13}); c != want {
		t.Errorf("counts = %+v, want %+v", c, want)
	}
	if !c.complete(4, 3) || c.complete(4, 4) || c.complete(5, 1) {
		t.Errorf("complete: 4 ports of 13 backends should be 4 × 3, not 4 × 4 nor 5 × 1")
	}
	if _, err := (ipvsPath{}).counts(fakeNode{}); err == nil {
		t.Error("counts of a failed ipvsadm: no error")
	}
}

// TestIPVSBackends: one virtual server's real servers of weight above 0; a virtual
// server ipvsadm does not find (deleted) is -1.
func TestIPVSBackends(t *testing.T) {
	node := fakeNode{"ipvsadm -Ln -t 10.96.0.14:80": {testdata(t, "ipvsadm-port.txt"), 0},
		"ipvsadm -Ln -t 10.96.0.15:80": {"Memory allocation problem\n", 1}}
	for _, c := range []struct {
		vip  string
		want int
	}{{"10.96.0.14", 4}, {"10.96.0.15", -1}} {
		if got, err := (ipvsPath{}).backends(node, c.vip, 80); err != nil || got != c.want {
			t.Errorf("backends(%s) = %d, %v; want %d", c.vip, got, err, c.want)
		}
	}
}

// TestNftCounts reads kube-proxy's table as nft 1.0.6 lists it (testdata made with
// `nft -f` in a network namespace, in the shape of kubernetes v1.37's
// pkg/proxy/nftables/proxier.go): four ClusterIP ports in service-ips (a numgen DNAT
// map of 4, one endpoint's DNAT, session affinity's vmap to 4 endpoint chains), a
// NodePort in service-nodeports through its external- chain, and the apiserver's Service
// with no endpoints in no-endpoint-services (no Service port of the data path).
func TestNftCounts(t *testing.T) {
	node := fakeNode{"nft list table ip kube-proxy": {testdata(t, "nft-kube-proxy.txt"), 0}}
	c, err := kubeProxyNftPath{}.counts(node)
	if err != nil {
		t.Fatal(err)
	}
	if want := (portCounts{Ports: 5, Backends: 17, ClusterPorts: 4, ClusterBackends: 13}); c != want {
		t.Errorf("counts = %+v, want %+v", c, want)
	}
	// Before kube-proxy's first transaction there is no table: nothing programmed.
	if c, err := (kubeProxyNftPath{}).counts(fakeNode{}); err != nil || c != (portCounts{}) {
		t.Errorf("counts without the table = %+v, %v", c, err)
	}
}

// TestNftEndpointChainsMustExist: an element going to a chain that is not there, or a
// vmap to endpoint chains that are not there, sends nowhere.
func TestNftEndpointChainsMustExist(t *testing.T) {
	full := testdata(t, "nft-kube-proxy.txt")
	for _, c := range []struct{ name, cut, key string }{
		{"affinity's endpoint chains gone", "chain endpoint-", "10.96.0.14 . tcp . 80"},
		{"the Service port's chain gone", "chain service-QS6OF7GR", "10.96.0.10 . tcp . 80"},
	} {
		var kept []string
		skip := false
		for _, l := range strings.Split(full, "\n") {
			if strings.Contains(l, c.cut) {
				skip = true
			}
			if !skip {
				kept = append(kept, l)
			}
			if skip && strings.TrimSpace(l) == "}" {
				skip = false
			}
		}
		if got := parseNft(strings.Join(kept, "\n")).backends(c.key); got != 0 {
			t.Errorf("%s: %s has %d backends, want 0", c.name, c.key, got)
		}
	}
}

// TestNftBackends reads one Service port as nftPortCommand lists it (the element, its
// chain, its endpoint chains; captured from nft 1.0.6): 4 endpoints through session
// affinity's endpoint chains; no element (deleted) is -1.
func TestNftBackends(t *testing.T) {
	node := fakeNode{nftPortCommand("10.96.0.14", 80): {testdata(t, "nft-port-affinity.txt"), 0},
		nftPortCommand("10.96.0.15", 80): {"", 0}}
	for _, c := range []struct {
		vip  string
		want int
	}{{"10.96.0.14", 4}, {"10.96.0.15", -1}} {
		if got, err := (kubeProxyNftPath{}).backends(node, c.vip, 80); err != nil || got != c.want {
			t.Errorf("backends(%s) = %d, %v; want %d", c.vip, got, err, c.want)
		}
	}
	// Each way a Service chain sends to its endpoints, from the whole table.
	table := parseNft(testdata(t, "nft-kube-proxy.txt"))
	for key, want := range map[string]int{"10.96.0.10 . tcp . 80": 4, "10.96.0.12 . tcp . 80": 1, "10.96.0.14 . tcp . 80": 4, "10.96.0.1 . tcp . 443": -1} {
		if got := table.backends(key); got != want {
			t.Errorf("backends(%s) = %d, want %d", key, got, want)
		}
	}
}

// TestProgrammed: a change is seen when the port sends to the endpoints it should; a
// deleted Service when the data path holds nothing for it.
func TestProgrammed(t *testing.T) {
	node := fakeNode{"ipvsadm -Ln -t 10.96.0.14:80": {testdata(t, "ipvsadm-port.txt"), 0}}
	for _, c := range []struct {
		vip       string
		endpoints int
		want      bool
	}{{"10.96.0.14", 4, true}, {"10.96.0.14", 5, false}, {"10.96.0.14", -1, false}, {"10.96.0.15", -1, true}, {"10.96.0.15", 4, false}} {
		if got, _ := programmed(ipvsPath{}, node, c.vip, 80, c.endpoints); got != c.want {
			t.Errorf("programmed(%s, %d) = %v, want %v", c.vip, c.endpoints, got, c.want)
		}
	}
}

// TestEveryProxyHasADataPath: each proxy the scale bench runs is read through its own
// data path, and BENCH_PROXIES names them.
func TestEveryProxyHasADataPath(t *testing.T) {
	for _, p := range proxies {
		if dataPathOf(p) == nil {
			t.Errorf("%s: no data path", p.Name)
		}
	}
	if _, ok := dataPathOf(benchkit.KubeProxy("nftables")).(kubeProxyNftPath); !ok {
		t.Error("kube-proxy nftables is not read from its table")
	}
	if _, ok := dataPathOf(benchkit.KubeRouter).(ipvsPath); !ok {
		t.Error("kube-router is not read from IPVS")
	}
	if dataPathOf(benchkit.KubeProxy("iptables")) != nil {
		t.Error("kube-proxy iptables has a data path the scale bench reads")
	}
	t.Setenv("BENCH_PROXIES", "ipvs-proxier,kube-proxy nftables,kube-router")
	t.Setenv("BENCH_PROXIES_5000", "kube-router,kube-proxy")
	for n, want := range map[int]string{1000: "ipvs-proxier,kube-proxy nftables,kube-router", 5000: "kube-router,kube-proxy"} {
		ps, err := proxiesAt(n)
		var names []string
		for _, p := range ps {
			names = append(names, p.Name)
		}
		if err != nil || strings.Join(names, ",") != want {
			t.Errorf("proxiesAt(%d) = %v, %v; want %s", n, names, err, want)
		}
	}
	t.Setenv("BENCH_PROXIES", "kube-proxy iptables")
	if _, err := proxiesAt(1000); err == nil {
		t.Error("proxiesAt accepts a proxy the scale bench does not run")
	}
}

// TestProbeSample: 20 Services spread over the step, the first and the last included;
// all of a smaller step.
func TestProbeSample(t *testing.T) {
	s := probeSample(1000)
	if len(s) != probeCount || s[0] != 0 || s[len(s)-1] != 999 || s[1] != 52 {
		t.Errorf("probeSample(1000) = %v", s)
	}
	if s := probeSample(3); len(s) != 3 || s[2] != 2 {
		t.Errorf("probeSample(3) = %v", s)
	}
	script := probeScript(true, []string{benchkit.EpIP(999, 3)})
	for _, want := range []string{"ip netns add client", "/agent httpd probe-ep", "ip addr replace 10.131.3.231/32 dev eth0 && ip route replace 10.131.3.231/32 dev h-probe-ep"} {
		if !strings.Contains(script, want) {
			t.Errorf("probe script lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(probeScript(false, nil), "netns add") {
		t.Error("a later step's probe script makes the netns again")
	}
}

package reconcile

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	ct "github.com/ti-mo/conntrack"
	"github.com/ti-mo/netfilter"
	"github.com/vishvananda/netns"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// The tests in this file program a real kernel and send real packets. They run in the
// VM (`make test-vm`), which the test owns entirely.

func sh(t *testing.T, cmd string) string {
	t.Helper()
	// Debian's static busybox sh prefers its own applets (a busybox `ip` without netns
	// support) over PATH, so iproute2 is called by path.
	out, err := exec.Command("sh", "-c", `ip() { /usr/sbin/ip "$@"; }; `+cmd).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return string(out)
}

// makePod makes a network namespace with a veth to the host, address ip/32 and a default
// route via 169.254.1.1 on the host side (as Calico does; it works with strict ARP,
// which an earlier test in the VM turns on), and starts
// the e2e agent in it as a server answering "<name> <client addr>" on TCP 80 and UDP 53.
func makePod(t *testing.T, name, ip string) {
	t.Helper()
	sh(t, fmt.Sprintf(`ip netns add %[1]s && ip link add h-%[1]s type veth peer name eth0 netns %[1]s &&
ip link set h-%[1]s up && ip route add %[2]s/32 dev h-%[1]s &&
ip netns exec %[1]s ip link set lo up && ip netns exec %[1]s ip link set eth0 up &&
ip netns exec %[1]s ip addr add %[2]s/32 dev eth0 &&
ip addr add 169.254.1.1/32 dev h-%[1]s &&
ip netns exec %[1]s ip route add 169.254.1.1 dev eth0 && ip netns exec %[1]s ip route add default via 169.254.1.1`, name, ip))
	// The pods' server is the e2e agent's (`agent serve NAME`), which make test-vm ships.
	cmd := exec.Command("/usr/sbin/ip", "netns", "exec", name, "/agent", "serve", name)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

// linuxKernel is the VM's kernel behind the seam, with our chains, closed when t ends.
func linuxKernel(t *testing.T) kernel.Kernel {
	t.Helper()
	chains := []string{}
	for _, cs := range proxier.RuleChains {
		chains = append(chains, cs...)
	}
	k, x, err := linux.New(5*time.Second, func() (kernel.Sets, kernel.Rules) { return linux.OpenIptables(chains) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return k
}

// inNetns runs fn on a thread inside the named network namespace.
func inNetns(t *testing.T, name string, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	h, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := netns.Set(h); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = netns.Set(orig) }()
	fn()
}

// ask connects from the client netns and returns the answer's first word, or the error.
func ask(t *testing.T, target string) (string, error) { return askFrom(t, "", target) }

// askFrom is ask with a chosen client source address ("" for the default).
func askFrom(t *testing.T, source, target string) (string, error) {
	f, err := askIn(t, "client", source, target)
	if len(f) > 0 {
		return f[0], err
	}
	return "", err
}

// askIn connects from a netns and returns the answer's words: pod name, client address.
func askIn(t *testing.T, ns, source, target string) ([]string, error) {
	var answer string
	var err error
	inNetns(t, ns, func() {
		d := net.Dialer{Timeout: 3 * time.Second}
		if source != "" {
			d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
		}
		var c net.Conn
		c, err = d.Dial("tcp", target)
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		answer, err = bufio.NewReader(c).ReadString('\n')
	})
	return strings.Fields(answer), err
}

// hold opens a connection from the client netns, reads the answer and keeps it open.
func hold(t *testing.T, target string) (string, net.Conn) {
	t.Helper()
	var c net.Conn
	var answer string
	inNetns(t, "client", func() {
		var err error
		if c, err = net.DialTimeout("tcp", target, 3*time.Second); err != nil {
			t.Fatal(err)
		}
		if answer, err = bufio.NewReader(c).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { c.Close() })
	return strings.Fields(answer)[0], c
}

// askUDP sends one datagram from the client netns, from a fixed source port, and
// returns the answering pod, or the error (a timeout means the packet was lost).
func askUDP(t *testing.T, target string, srcPort int) (string, error) {
	var answer string
	var err error
	inNetns(t, "client", func() {
		var c *net.UDPConn
		c, err = net.DialUDP("udp", &net.UDPAddr{Port: srcPort}, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(target)))
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err = c.Write([]byte("q")); err != nil {
			return
		}
		buf := make([]byte, 200)
		var n int
		n, err = c.Read(buf)
		answer = string(buf[:n])
	})
	if f := strings.Fields(answer); len(f) > 0 {
		return f[0], err
	}
	return "", err
}

// localSlice is slice with every endpoint on this node ("vm").
func localSlice(ns, svcName, name string, port int32, proto v1.Protocol, ips ...string) *discovery.EndpointSlice {
	s := slice(ns, svcName, name, port, proto, ips...)
	for i := range s.Endpoints {
		s.Endpoints[i].NodeName = ptr.To("vm")
	}
	return s
}

// normIPVS drops what `plan` cannot know from `ipvsadm -Ln`: connection counters, and
// real servers draining at weight 0 (no longer desired, still in the kernel).
func normIPVS(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); strings.HasPrefix(l, "  ->") && len(f) == 6 && f[1] != "RemoteAddress:Port" {
			if f[3] == "0" {
				continue
			}
			l = strings.Join(f[:4], " ")
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// canonIPVS is normIPVS in an order that does not depend on the order of the writes
// (a repair writes what it finds missing in map order), so that a comparison rests
// on what is programmed, not on how a tool lists it. Each block (a virtual server and
// its real servers, sorted) is kept whole; the blocks are sorted, after the header.
func canonIPVS(s string) string {
	var head []string
	var blocks [][]string
	for _, l := range strings.Split(normIPVS(s), "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "->") && len(blocks) > 0:
			blocks[len(blocks)-1] = append(blocks[len(blocks)-1], l)
		case strings.HasPrefix(l, "TCP ") || strings.HasPrefix(l, "UDP ") || strings.HasPrefix(l, "SCTP "):
			blocks = append(blocks, []string{l})
		default:
			head = append(head, l)
		}
	}
	out := make([]string, 0, len(blocks))
	for _, b := range blocks {
		slices.Sort(b[1:])
		out = append(out, strings.Join(b, "\n"))
	}
	slices.Sort(out)
	return strings.Join(append(head, out...), "\n")
}

// TestRealPackets: the syncer programs a real kernel and traffic from a client netns
// reaches the pods through a ClusterIP.
func TestRealPackets(t *testing.T) {
	kerneltest.RequireIPVS(t)
	sh(t, `for k in ipv4/ip_forward ipv4/vs/conntrack ipv4/vs/expire_nodest_conn; do echo 1 > /proc/sys/net/$k; done &&
ip netns add client && ip link add h-client type veth peer name eth0 netns client &&
ip link set h-client up && ip addr add 10.0.5.1/24 dev h-client &&
ip netns exec client ip link set lo up && ip netns exec client ip link set eth0 up &&
ip netns exec client ip addr add 10.0.5.2/24 dev eth0 && ip netns exec client ip addr add 10.0.5.3/24 dev eth0 &&
ip netns exec client ip addr add 10.0.5.4/24 dev eth0 && ip netns exec client ip route add default via 10.0.5.1`)
	makePod(t, "pod1", "10.244.0.11")
	makePod(t, "pod2", "10.244.0.12")

	backend := testRulesBackend()
	rules := rulesView{backend}
	t.Logf("rules backend: %s", backend)
	if backend == proxier.RulesNftables {
		// As the daemon starts: the preflight of the nftables backend loads nf_tables and
		// asks for nothing of xtables; at the end (below) none of it was loaded.
		if r := (linux.Preflight{Rules: linux.NftablesModules}).Check([]string{"rr", "sh", "mh", "lc", "sed"}); len(r.MissingModules) > 0 || r.NoIPVS != "" {
			t.Fatalf("preflight: %s", r)
		}
		defer t.Run("nothing of xtables or ipset was loaded", checkNoXtables)
	}
	k := linuxKernelFor(t, backend)
	src := source.NewStaticSource()
	tracker := source.NewTracker(nil)
	opts := Options{Config: proxier.Config{NodeName: "vm", NodeIPs: []netip.Addr{netip.MustParseAddr("10.0.5.1")},
		ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}, RulesBackend: backend}, GracefulTimeout: time.Hour}
	s := NewSyncer(opts, k, src, tracker)
	web := svc("default", "web", "10.96.0.10", 80, v1.ProtocolTCP)
	src.SetService(web)
	src.SetSlice(slice("default", "web", "web-1", 80, v1.ProtocolTCP, "10.244.0.11", "10.244.0.12"))
	src.SetService(svc("default", "empty", "10.96.0.11", 80, v1.ProtocolTCP))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + sh(t, "ipvsadm -Ln"))

	t.Run("rr alternates", func(t *testing.T) {
		seen := map[string]int{}
		var order []string
		for range 6 {
			name, err := ask(t, "10.96.0.10:80")
			if err != nil {
				t.Fatal(err)
			}
			seen[name]++
			order = append(order, name)
		}
		if seen["pod1"] != 3 || seen["pod2"] != 3 {
			t.Errorf("answers %v", order)
		}
		for i := 1; i < len(order); i++ {
			if order[i] == order[i-1] {
				t.Errorf("rr did not alternate: %v", order)
				break
			}
		}
	})
	sticky := func(t *testing.T, name, ip string, mut func(*v1.Service)) {
		t.Helper()
		sv := svc("default", name, ip, 80, v1.ProtocolTCP)
		mut(sv)
		src.SetService(sv)
		src.SetSlice(slice("default", name, name+"-1", 80, v1.ProtocolTCP, "10.244.0.11", "10.244.0.12"))
		tracker.ServiceChanged(proxier.ServiceKey{Namespace: "default", Name: name})
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		for _, source := range []string{"10.0.5.2", "10.0.5.3", "10.0.5.4"} {
			first := ""
			for i := range 4 {
				got, err := askFrom(t, source, ip+":80")
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = got
				} else if got != first {
					t.Errorf("source %s: answer %d from %s, first from %s", source, i, got, first)
				}
			}
		}
	}
	t.Run("session affinity sticks", func(t *testing.T) {
		sticky(t, "affinity", "10.96.0.20", func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityClientIP })
		if out := sh(t, "ipvsadm -Ln -t 10.96.0.20:80"); !strings.Contains(out, "rr persistent 10800") {
			t.Errorf("ipvsadm:\n%s", out)
		}
	})
	t.Run("sh sticks per source", func(t *testing.T) {
		sticky(t, "sh", "10.96.0.21", func(s *v1.Service) { s.Annotations = map[string]string{proxier.AnnotationScheduler: "sh"} })
		if out := sh(t, "ipvsadm -Ln -t 10.96.0.21:80"); !strings.Contains(out, "10.96.0.21:80 sh") {
			t.Errorf("ipvsadm:\n%s", out)
		}
	})
	t.Run("no endpoints is refused at once", func(t *testing.T) {
		start := time.Now()
		_, err := ask(t, "10.96.0.11:80")
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("err %v, want connection refused", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("refusal took %v", d)
		}
		// On 6.1 IPVS itself answers ICMP port unreachable for a virtual server with no
		// destinations; our REJECT rule answers first, which its counter shows. (Our
		// nftables rules carry no counters: a counter would change what Save compares.)
		if backend == proxier.RulesNftables {
			return
		}
		out := sh(t, "iptables -w -t filter -L KUBE-PROXY-FIREWALL -v -n -x | grep KUBE-NO-ENDPOINTS")
		if f := strings.Fields(out); len(f) == 0 || f[0] == "0" {
			t.Errorf("REJECT rule did not see the connection: %q", out)
		}
	})
	t.Run("host listeners are not reachable on a VIP's other ports", func(t *testing.T) {
		l, err := net.Listen("tcp", ":2222")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				fmt.Fprintln(c, "host")
				c.Close()
			}
		}()
		if name, err := ask(t, "10.0.5.1:2222"); err != nil || name != "host" {
			t.Fatalf("control: host listener on its own address: %q %v", name, err)
		}
		if name, err := ask(t, "10.96.0.10:2222"); err == nil {
			t.Errorf("host listener reached through the VIP: %q", name)
		}
	})
	t.Run("endpoint removal and scale to zero", func(t *testing.T) {
		src.SetSlice(slice("default", "web", "web-1", 80, v1.ProtocolTCP, "10.244.0.12"))
		tracker.ServiceChanged(proxier.ServiceKey{Namespace: "default", Name: "web"})
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if name, err := ask(t, "10.96.0.10:80"); err != nil || name != "pod2" {
				t.Errorf("after removing pod1: %q %v", name, err)
			}
		}
		src.SetSlice(slice("default", "web", "web-1", 80, v1.ProtocolTCP))
		tracker.ServiceChanged(proxier.ServiceKey{Namespace: "default", Name: "web"})
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		if _, err := ask(t, "10.96.0.10:80"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("scaled to zero: %v, want refused", err)
		}
	})
	update := func(t *testing.T, name string, sv *v1.Service, sl *discovery.EndpointSlice) {
		t.Helper()
		if sv != nil {
			src.SetService(sv)
		}
		if sl != nil {
			src.SetSlice(sl)
		}
		tracker.ServiceChanged(proxier.ServiceKey{Namespace: "default", Name: name})
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	tcp, udp := v1.ProtocolTCP, v1.ProtocolUDP
	// scheduled programs default/name on vip:80 with the scheduler sched over pod1 and pod2.
	scheduled := func(t *testing.T, name, vip, sched string) {
		sv := svc("default", name, vip, 80, tcp)
		sv.Annotations = map[string]string{proxier.AnnotationScheduler: sched}
		update(t, name, sv, slice("default", name, name+"-1", 80, tcp, "10.244.0.11", "10.244.0.12"))
	}
	t.Run("lc and sed prefer the idle backend", func(t *testing.T) {
		for i, sched := range []string{"lc", "sed"} {
			ip := fmt.Sprintf("10.96.0.%d", 30+i)
			scheduled(t, "idle-"+sched, ip, sched)
			busy, _ := hold(t, ip+":80")
			for range 3 {
				got, err := ask(t, ip+":80")
				if err != nil {
					t.Fatal(err)
				}
				if got == busy {
					t.Errorf("%s: a new connection went to %s, which holds an open one", sched, busy)
				}
			}
		}
	})
	t.Run("a pod reaches itself through its own service (hairpin)", func(t *testing.T) {
		update(t, "hairpin", svc("default", "hairpin", "10.96.0.40", 80, tcp), localSlice("default", "hairpin", "hairpin-1", 80, tcp, "10.244.0.11"))
		f, err := askIn(t, "pod1", "", "10.96.0.40:80")
		if err != nil || len(f) < 2 || f[0] != "pod1" {
			t.Fatalf("hairpin: %v %v", f, err)
		}
	})
	nodePort := func(name, ip string, port int32, local bool) *v1.Service {
		sv := svc("default", name, ip, 80, tcp)
		sv.Spec.Type, sv.Spec.Ports[0].NodePort = v1.ServiceTypeNodePort, port
		if local {
			sv.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		}
		return sv
	}
	t.Run("NodePort from an external netns is SNATed; with ETP=Local the client IP is kept", func(t *testing.T) {
		update(t, "np-cluster", nodePort("np-cluster", "10.96.0.50", 30080, false), localSlice("default", "np-cluster", "np-cluster-1", 80, tcp, "10.244.0.11"))
		f, err := askIn(t, "client", "", "10.0.5.1:30080")
		if err != nil || len(f) < 2 || f[0] != "pod1" || strings.HasPrefix(f[1], "10.0.5.2:") {
			t.Errorf("ETP=Cluster NodePort: %v %v (want pod1, source not 10.0.5.2)", f, err)
		}
		update(t, "np-local", nodePort("np-local", "10.96.0.51", 30081, true), localSlice("default", "np-local", "np-local-1", 80, tcp, "10.244.0.12"))
		f, err = askIn(t, "client", "", "10.0.5.1:30081")
		if err != nil || len(f) < 2 || f[0] != "pod2" || !strings.HasPrefix(f[1], "10.0.5.2:") {
			t.Errorf("ETP=Local NodePort: %v %v (want pod2 seeing 10.0.5.2)", f, err)
		}
	})
	t.Run("ETP=Local without a local endpoint drops outside traffic and serves pods", func(t *testing.T) {
		update(t, "np-remote", nodePort("np-remote", "10.96.0.52", 30082, true), slice("default", "np-remote", "np-remote-1", 80, tcp, "10.244.0.12"))
		if f, err := askIn(t, "client", "", "10.0.5.1:30082"); err == nil {
			t.Errorf("outside client reached a remote endpoint through an ETP=Local NodePort: %v", f)
		}
		if f, err := askIn(t, "pod1", "", "10.0.5.1:30082"); err != nil || len(f) == 0 || f[0] != "pod2" {
			t.Errorf("in-cluster client: %v %v (want pod2)", f, err)
		}
	})
	t.Run("loadBalancerSourceRanges admit the listed clients only, not the node outside them", func(t *testing.T) {
		lb := svc("default", "lb", "10.96.0.70", 80, tcp)
		lb.Spec.Type = v1.ServiceTypeLoadBalancer
		lb.Spec.LoadBalancerSourceRanges = []string{"10.0.5.2/32"}
		lb.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "10.0.7.1"}}
		update(t, "lb", lb, slice("default", "lb", "lb-1", 80, tcp, "10.244.0.11"))
		if got, err := askFrom(t, "10.0.5.2", "10.0.7.1:80"); err != nil || got != "pod1" {
			t.Errorf("client in the ranges: %q %v (want pod1)", got, err)
		}
		if got, err := askFrom(t, "10.0.5.3", "10.0.7.1:80"); err == nil {
			t.Errorf("client outside the ranges reached %q", got)
		}
		// The node's own address, 10.0.5.1, is outside them: the out filter stops it
		// (kubernetes#119656).
		if c, err := net.DialTimeout("tcp", "10.0.7.1:80", 2*time.Second); err == nil {
			c.Close()
			t.Error("the node reached a LoadBalancer whose source ranges exclude it")
		}
	})
	t.Run("detectLocalMode NodeCIDR and InterfaceNamePrefix exempt pods from the ETP=Local drop with no cluster CIDR", func(t *testing.T) {
		setDetector := func(mode proxier.LocalMode, cidrs []netip.Prefix) {
			t.Helper()
			s.mu.Lock()
			s.opts.Config.LocalMode, s.opts.Config.InterfaceNamePrefix, s.opts.Config.ClusterCIDRs = mode, "h-pod", cidrs
			s.mu.Unlock()
			tracker.AllChanged()
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		defer setDetector(proxier.LocalModeClusterCIDR, opts.Config.ClusterCIDRs)
		// No detector at all: pods are outside too, and the drop takes them.
		setDetector(proxier.LocalModeClusterCIDR, nil)
		if f, err := askIn(t, "pod1", "", "10.0.5.1:30082"); err == nil {
			t.Errorf("no detector: a pod reached the ETP=Local NodePort without a local endpoint: %v", f)
		}
		// NodeCIDR: the pods' addresses are in the Node's pod CIDR.
		src.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm"}, Spec: v1.NodeSpec{PodCIDRs: []string{"10.244.0.0/24"}}})
		setDetector(proxier.LocalModeNodeCIDR, nil)
		if !rules.has(t, "filter", "KUBE-EXTERNAL-NO-LOCAL", `-A KUBE-EXTERNAL-NO-LOCAL -s 10\.244\.0\.0/24 -j RETURN`, "ip saddr 10.244.0.0/24 return") {
			t.Error("NodeCIDR rules")
		}
		if f, err := askIn(t, "client", "", "10.0.5.1:30082"); err == nil {
			t.Errorf("NodeCIDR: outside client reached a remote endpoint through an ETP=Local NodePort: %v", f)
		}
		if f, err := askIn(t, "pod1", "", "10.0.5.1:30082"); err != nil || len(f) == 0 || f[0] != "pod2" {
			t.Errorf("NodeCIDR: pod in the Node's pod CIDR: %v %v (want pod2)", f, err)
		}
		// The pods' host-side veths are h-pod1, h-pod2 (the client's is h-client): the
		// prefix finds the pods only.
		setDetector(proxier.LocalModeInterfaceNamePrefix, nil)
		if !rules.has(t, "filter", "KUBE-EXTERNAL-NO-LOCAL", `-A KUBE-EXTERNAL-NO-LOCAL -i h-pod\+ -j RETURN`, `iifname "h-pod*" return`) ||
			!rules.has(t, "nat", "KUBE-SERVICES",
				`-A KUBE-SERVICES ! -i h-pod\+ .*KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ`,
				`ip daddr . meta l4proto . th dport @KUBE-CLUSTER-IP iifname != "h-pod*" jump KUBE-MARK-MASQ comment "Kubernetes service cluster ip + port for masquerade purpose"`) {
			t.Error("InterfaceNamePrefix rules")
		}
		if f, err := askIn(t, "client", "", "10.0.5.1:30082"); err == nil {
			t.Errorf("outside client reached a remote endpoint through an ETP=Local NodePort: %v", f)
		}
		if f, err := askIn(t, "pod1", "", "10.0.5.1:30082"); err != nil || len(f) == 0 || f[0] != "pod2" {
			t.Errorf("pod through its h- veth: %v %v (want pod2)", f, err)
		}
	})
	t.Run("sh and mh with a draining real server serve every new client", func(t *testing.T) {
		// 16 client addresses: each hashes to the drained server with even odds, so
		// without the fallback flag some would be refused.
		var sources []string
		for i := range 16 {
			sources = append(sources, fmt.Sprintf("10.0.5.%d", 100+i))
			sh(t, fmt.Sprintf("ip netns exec client ip addr add %s/24 dev eth0", sources[i]))
		}
		for i, sched := range []string{"sh", "mh"} {
			name, vip := "drain-"+sched, fmt.Sprintf("10.96.0.%d", 70+i)
			scheduled(t, name, vip, sched)
			busy, _ := hold(t, vip+":80")
			other := map[string]string{"pod1": "10.244.0.12", "pod2": "10.244.0.11"}[busy]
			update(t, name, nil, slice("default", name, name+"-1", 80, tcp, other))
			out := sh(t, "ipvsadm -Ln -t "+vip+":80")
			if !strings.Contains(out, "Masq    0      1") {
				t.Fatalf("%s: want a draining server at weight 0:\n%s", sched, out)
			}
			if !strings.Contains(out, sched+"-fallback") {
				t.Errorf("%s: no fallback flag:\n%s", sched, out)
			}
			for _, src := range sources {
				if got, err := askFrom(t, src, vip+":80"); err != nil || got == busy {
					t.Errorf("%s: client %s got %q %v while %s drains", sched, src, got, err, busy)
				}
			}
		}
	})
	t.Run("UDP endpoint replacement does not blackhole", func(t *testing.T) {
		update(t, "dns", svc("default", "dns", "10.96.0.53", 53, udp), slice("default", "dns", "dns-1", 53, udp, "10.244.0.11"))
		for range 2 {
			if got, err := askUDP(t, "10.96.0.53:53", 5353); err != nil || got != "pod1" {
				t.Fatalf("before: %q %v", got, err)
			}
		}
		update(t, "dns", nil, slice("default", "dns", "dns-1", 53, udp, "10.244.0.12"))
		if got, err := askUDP(t, "10.96.0.53:53", 5353); err != nil || got != "pod2" {
			t.Errorf("first datagram after the replacement: %q %v (want pod2)", got, err)
		}
	})
	t.Run("an unallocated ClusterIP is refused at once; an allocated one answers", func(t *testing.T) {
		refused := func(ns string) error {
			if ns == "" {
				c, err := net.DialTimeout("tcp", "10.96.99.99:80", 3*time.Second)
				if err == nil {
					c.Close()
				}
				return err
			}
			_, err := askIn(t, ns, "", "10.96.99.99:80")
			return err
		}
		// Unallocated addresses route out of the node (here into a dummy device, which
		// drops them): without the check a connection times out. (Not back out of the
		// client's link: the ICMP redirect the node then sends takes the rate-limit token
		// the REJECT's error needs.)
		sh(t, "ip link add sink type dummy && ip link set sink up && ip route add 10.96.0.0/16 dev sink")
		defer sh(t, "ip link del sink")
		for _, ns := range []string{"client", ""} {
			if err := refused(ns); errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("from %q: refused before the check existed: %v", ns, err)
			}
		}
		s.mu.Lock()
		s.opts.Config.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")}
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.opts.Config.ServiceCIDRs = nil
			s.mu.Unlock()
			tracker.AllChanged()
			_ = s.Sync()
		}()
		tracker.AllChanged()
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		for _, ns := range []string{"client", "pod1", ""} { // forwarded from outside, from a pod, and the node's own (OUTPUT)
			if err := refused(ns); !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("from %q: %v, want connection refused", ns, err)
			}
		}
		if got, err := ask(t, "10.96.0.20:80"); err != nil || got == "" { // sticky, served by both pods
			t.Errorf("allocated ClusterIP 10.96.0.20: %q %v\n%s", got, err, rules.sets(t))
		}
	})
	t.Run("the UDP conntrack reconcile removes a stale flow made by hand", func(t *testing.T) {
		conn, err := ct.Dial(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		mk := func(src, ep netip.AddrPort) {
			vip := netip.MustParseAddrPort("10.96.0.53:53") // dns, served by pod2 since the subtest above
			f := ct.NewFlow(17, 0, src.Addr(), vip.Addr(), src.Port(), vip.Port(), 120, 0)
			f.TupleReply.IP.SourceAddress, f.TupleReply.Proto.SourcePort = ep.Addr(), ep.Port()
			f.TupleReply.IP.DestinationAddress, f.TupleReply.Proto.DestinationPort = src.Addr(), src.Port()
			if err := conn.Create(f); err != nil {
				t.Fatalf("create flow: %v", err)
			}
		}
		mk(netip.MustParseAddrPort("10.0.5.9:4000"), netip.MustParseAddrPort("10.244.0.99:53")) // an endpoint long gone
		mk(netip.MustParseAddrPort("10.0.5.9:4001"), netip.MustParseAddrPort("10.244.0.12:53")) // pod2, live
		s.mu.Lock()
		s.rules.ReconcileUDPNext()
		s.mu.Unlock()
		tracker.AllChanged()
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		fs, err := conn.DumpFilter(ct.NewFilter().Family(netfilter.ProtoIPv4), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out string
		for _, f := range fs {
			if f.TupleOrig.IP.DestinationAddress == netip.MustParseAddr("10.96.0.53") {
				out += fmt.Sprintf("sport=%d reply-src=%s\n", f.TupleOrig.Proto.SourcePort, f.TupleReply.IP.SourceAddress)
			}
		}
		if strings.Contains(out, "10.244.0.99") || !strings.Contains(out, "sport=4001 reply-src=10.244.0.12") {
			t.Errorf("after the reconcile:\n%s", out)
		}
	})
	t.Run("graceful termination keeps an open connection, new ones go elsewhere", func(t *testing.T) {
		update(t, "gt", svc("default", "gt", "10.96.0.60", 80, tcp), slice("default", "gt", "gt-1", 80, tcp, "10.244.0.11"))
		busy, c := hold(t, "10.96.0.60:80")
		update(t, "gt", nil, slice("default", "gt", "gt-1", 80, tcp, "10.244.0.12"))
		if out := sh(t, "ipvsadm -Ln -t 10.96.0.60:80"); !strings.Contains(out, "-> 10.244.0.11:80               Masq    0      1") {
			t.Errorf("draining server not at weight 0 with its connection:\n%s", out)
		}
		if got, err := ask(t, "10.96.0.60:80"); err != nil || got == busy {
			t.Errorf("new connection: %q %v, want the other pod", got, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); !os.IsTimeout(err) {
			t.Errorf("held connection broken after its endpoint left: %v", err)
		}
	})
	t.Run("plan equals the kernel", func(t *testing.T) {
		cfg := s.Config()
		plan := normIPVS(s.Desired().Plan(&cfg))
		got := normIPVS(sh(t, "ipvsadm -Ln"))
		if !strings.HasPrefix(plan, got) {
			t.Errorf("ipvsadm -Ln:\n%s\nplan:\n%s", got, plan)
		}
	})
	t.Run("restart adopts without changes", func(t *testing.T) {
		before := sh(t, "ipvsadm -Ln; ip addr show kube-ipvs0") + rules.sets(t)
		s2 := NewSyncer(opts, k, src, source.NewTracker(nil))
		if err := s2.Sync(); err != nil {
			t.Fatal(err)
		}
		if after := sh(t, "ipvsadm -Ln; ip addr show kube-ipvs0") + rules.sets(t); after != before {
			t.Errorf("state changed on restart:\n%s\n---\n%s", before, after)
		}
	})
	t.Run("drift repair", func(t *testing.T) {
		src.SetSlice(slice("default", "web", "web-1", 80, v1.ProtocolTCP, "10.244.0.11"))
		tracker.ServiceChanged(proxier.ServiceKey{Namespace: "default", Name: "web"})
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		// Every member, sorted: a hash set lists a bucket's members in the order they
		// were added, and the repair adds them in another order (comparing the first
		// nine members as listed failed when two of them shared a bucket).
		state := func() string { return canonIPVS(sh(t, "ipvsadm -Ln")) + rules.members(t, "KUBE-CLUSTER-IP") }
		want := state()
		sh(t, "ipvsadm -C")
		rules.flush(t, "KUBE-CLUSTER-IP")
		tracker.AllChanged()
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		if got := state(); got != want {
			t.Errorf("not repaired:\n%s\nwant\n%s", got, want)
		}
		if name, err := ask(t, "10.96.0.10:80"); err != nil || name != "pod1" {
			t.Errorf("traffic after repair: %q %v", name, err)
		}
	})
}

package harness

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeIP is the VM's address on its qemu user network.
const NodeIP = "10.0.2.15"

// Node is a VM running ipvs-proxier and the agent.
type Node struct {
	Name string
	// IP is the Node's InternalIP: the link address when the node has a Link, NodeIP
	// otherwise.
	IP        string
	dir       string
	agentPort int
	cmd       *exec.Cmd
	Console   string
	// Forwarded maps a port on the node's loopback to the host loopback port that
	// reaches it (NodeOptions.Forward).
	Forwarded map[int]int
}

// AgentURL is the host-side address of the node's agent (/exec, /ask, /get).
func (n *Node) AgentURL() string { return fmt.Sprintf("http://127.0.0.1:%d", n.agentPort) }

// Link is a second NIC joining nodes on an L2 segment: a qemu socket network over the
// host's loopback, one node listening, the others connecting. Pod CIDRs of other nodes
// are routed through it, as a flat pod network (Calico without encapsulation) would.
type Link struct {
	Port   int    // host loopback port of the socket network
	Listen bool   // this node's qemu listens; start it first
	IP     string // the node's address on the link, /24
	IP6    string // and its IPv6 address there, /64 (none when empty)
	MAC    string // distinct per node
	// Routes: destination CIDR -> gateway on the link.
	Routes map[string]string
}

// qemuArgs is the second NIC on the link's socket network.
func (l *Link) qemuArgs() []string {
	mode := "connect"
	if l.Listen {
		mode = "listen"
	}
	return []string{"-netdev", fmt.Sprintf("socket,id=n1,%s=127.0.0.1:%d", mode, l.Port), "-device", "e1000,netdev=n1,mac=" + l.MAC}
}

// setup is the boot script's lines that bring the link up (none for a nil Link).
func (l *Link) setup() string {
	if l == nil {
		return ""
	}
	s := "/usr/sbin/ip link set eth1 up\n/usr/sbin/ip addr add " + l.IP + "/24 dev eth1\n"
	if l.IP6 != "" {
		s += "/usr/sbin/ip -6 addr add " + l.IP6 + "/64 dev eth1 nodad\n"
	}
	for cidr, gw := range l.Routes {
		s += "/usr/sbin/ip route add " + cidr + " via " + gw + "\n"
	}
	return s
}

// StartNode registers a Node object, boots a VM that runs the daemon as the DaemonSet
// does (same command, config file, in-cluster ServiceAccount credentials), and waits
// for its agent.
func (cp *ControlPlane) StartNode(ctx context.Context, name string, dep *Deployment, link *Link) (*Node, error) {
	return cp.StartNodeWith(ctx, name, dep, NodeOptions{Link: link})
}

// NodeOptions shape a node VM.
type NodeOptions struct {
	Link *Link
	// NoDaemon boots the node without starting ipvs-proxier (the scale benchmark starts
	// each proxy itself); /start-daemon.sh starts it.
	NoDaemon bool
	// MemoryMB is the VM's memory; 1536 when 0.
	MemoryMB int
	// Forward makes these ports of the node's loopback reachable from the host's: each
	// goes to the preferred host port in the map when it is free, else to a free one
	// (Node.Forwarded says which).
	Forward map[int]int
}

// forwardOffset moves a forwarded port's relay in the guest clear of the original.
const forwardOffset = 10000

// StartNodeWith is StartNode with options.
func (cp *ControlPlane) StartNodeWith(ctx context.Context, name string, dep *Deployment, opts NodeOptions) (*Node, error) {
	n := &Node{Name: name, IP: NodeIP, dir: filepath.Join(cp.Dir, "node-"+name), Forwarded: map[int]int{}}
	if opts.Link != nil {
		n.IP = opts.Link.IP
	}
	relays, hostfwd, err := n.forwards(opts.Forward)
	if err != nil {
		return nil, err
	}
	if err := cp.registerNode(ctx, name, n.IP); err != nil {
		return nil, err
	}
	payload := filepath.Join(n.dir, "payload")
	if err := BuildNodeBinaries(payload); err != nil {
		return nil, err
	}
	files, err := cp.nodeFiles(name, dep, opts, relays)
	if err != nil {
		return nil, err
	}
	if err := writeFiles(payload, files); err != nil {
		return nil, err
	}
	if err := n.boot(cp, payload, opts, hostfwd); err != nil {
		return nil, err
	}
	Logf("node %s up", name)
	return n, nil
}

// forwards picks the host port of each forwarded guest port: the relays the guest runs
// and the qemu hostfwd options that reach them.
func (n *Node) forwards(forward map[int]int) (relays, hostfwd string, err error) {
	for guest, preferred := range forward {
		host := preferred
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", host)); err == nil {
			_ = ln.Close()
		} else if host, err = FreePort(); err != nil {
			return "", "", err
		}
		n.Forwarded[guest] = host
		relays += fmt.Sprintf("/agent forward :%d 127.0.0.1:%d > /dev/null 2>&1 &\n", guest+forwardOffset, guest)
		hostfwd += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:%d", host, guest+forwardOffset)
	}
	return relays, hostfwd, nil
}

// registerNode creates the Node object with its zone, hostname label and InternalIP, as a
// kubelet would.
func (cp *ControlPlane) registerNode(ctx context.Context, name, ip string) error {
	node, err := cp.Admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{v1.LabelTopologyZone: "zone-a", v1.LabelHostname: name}}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	node.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}, {Type: v1.NodeHostName, Address: name}}
	_, err = cp.Admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// nodeFiles is what the node's initrd holds beside its binaries: the pod's service
// account, the daemon's start script as the DaemonSet runs it, the boot script, the
// Deployment's files, and stock kube-proxy with its own config.
func (cp *ControlPlane) nodeFiles(name string, dep *Deployment, opts NodeOptions, relays string) (map[string]string, error) {
	autostart := "sh /start-daemon.sh\n"
	if opts.NoDaemon {
		autostart = ""
	}
	linkSetup := opts.Link.setup()
	ca, err := os.ReadFile(cp.CACert)
	if err != nil {
		return nil, err
	}
	cmd := expandCommand(dep.Command, map[string]string{"NODE_NAME": name})
	files := map[string]string{
		"var/run/secrets/kubernetes.io/serviceaccount/token":     dep.Token,
		"var/run/secrets/kubernetes.io/serviceaccount/ca.crt":    string(ca),
		"var/run/secrets/kubernetes.io/serviceaccount/namespace": "kube-system",
		// The daemon's environment is the pod's: the kubelet always sets these to the
		// kubernetes Service's ClusterIP, which nothing routes on a node with no proxy
		// state, so the daemon must reach the apiserver through its kubeconfig.
		// Arguments to the script are added to the DaemonSet's (`sh /start-daemon.sh --vip-local-routes`).
		"start-daemon.sh": "#!/bin/sh\nexport KUBERNETES_SERVICE_HOST=" + KubernetesServiceIP + " KUBERNETES_SERVICE_PORT=443 NODE_NAME=" + name +
			"\n" + shellJoin(cmd) + " \"$@\" >> /tmp/daemon.log 2>&1 &\necho $! > /tmp/daemon.pid\n",
		"scenario.sh": "/usr/sbin/ip link set eth0 up\n/usr/sbin/ip addr add " + NodeIP + "/24 dev eth0\n/usr/sbin/ip route add default via 10.0.2.2\n" +
			linkSetup + "echo 1 > /proc/sys/net/ipv4/ip_forward\n/agent > /tmp/agent.log 2>&1 &\n" + relays + autostart + "while true; do sleep 3600; done\n",
	}
	for p, c := range dep.Files {
		files[p] = c
	}
	// Stock kube-proxy, for the takeover and differential tests: IPVS mode, its own
	// kubeconfig (admin token), started only when a test asks for it. Its files live
	// apart from the DaemonSet's /var/lib/kube-proxy.
	files[StockKubeProxyDir+"/kubeconfig"] = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://" + APIServerGuestIP +
		":6443\", certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt}\nusers:\n- name: u\n  user: {token: " + adminToken +
		"}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	files[StockKubeProxyDir+"/config.conf"] = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\n" +
		"hostnameOverride: " + name + "\nclusterCIDR: 10.244.0.0/16\nclientConnection: {kubeconfig: /" + StockKubeProxyDir + "/kubeconfig}\nipvs: {minSyncPeriod: 1s, syncPeriod: 30s}\n"
	files["start-kube-proxy.sh"] = "#!/bin/sh\n/usr/local/bin/kube-proxy --config=/" + StockKubeProxyDir + "/config.conf >> /tmp/kube-proxy.log 2>&1 &\necho $! > /tmp/kube-proxy.pid\n"
	if kp, err := os.ReadFile(cp.Bins.KubeProxy); err == nil {
		files["usr/local/bin/kube-proxy"] = string(kp)
	}
	// kube-router's service proxy, for the migration test and the benchmarks: started
	// only when a test asks for it (/start-kube-router.sh), with stock kube-proxy's
	// kubeconfig (it lists and watches namespaces, pods, nodes, Services, EndpointSlices
	// and NetworkPolicies). It reads and appends to /etc/iproute2/rt_tables, which the
	// VM's root lacks.
	files["start-kube-router.sh"] = "#!/bin/sh\nmkdir -p /etc/iproute2\n" +
		"[ -f /etc/iproute2/rt_tables ] || printf '255\\tlocal\\n254\\tmain\\n253\\tdefault\\n0\\tunspec\\n' > /etc/iproute2/rt_tables\n" +
		"NODE_NAME=" + name + " " + shellJoin(KubeRouterCommand(name)) + " >> /tmp/kube-router.log 2>&1 &\necho $! > /tmp/kube-router.pid\n"
	if kr, err := os.ReadFile(cp.Bins.KubeRouter); err == nil {
		files["usr/local/bin/kube-router"] = string(kr)
	}
	return files, nil
}

// writeFiles writes files (path → content) below dir, every one executable.
func writeFiles(dir string, files map[string]string) error {
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(c), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// boot packs payload into the node's initrd, starts qemu (TCG) with the agent's port,
// the apiserver's guestfwd, hostfwd and the pod-network link, and waits for the agent.
func (n *Node) boot(cp *ControlPlane, payload string, opts NodeOptions, hostfwd string) error {
	mem := "1536"
	if opts.MemoryMB > 0 {
		mem = fmt.Sprint(opts.MemoryMB)
	}
	vm := filepath.Join(RepoRoot(), "e2e/vm/vm.sh")
	initrd := filepath.Join(n.dir, "initrd.gz")
	if out, err := exec.Command(vm, "initrd", initrd, payload).CombinedOutput(); err != nil {
		return fmt.Errorf("initrd: %w\n%s", err, out)
	}
	kernelOut, err := exec.Command(vm, "kernel").Output()
	if err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	if n.agentPort, err = FreePort(); err != nil {
		return err
	}
	n.Console = filepath.Join(n.dir, "console.log")
	netdev := fmt.Sprintf("user,id=n0,restrict=on,net=10.0.2.0/24,guestfwd=tcp:%s:6443-cmd:socat - TCP:127.0.0.1:%d,hostfwd=tcp:127.0.0.1:%d-:7000%s",
		APIServerGuestIP, cp.Port, n.agentPort, hostfwd)
	args := []string{"-accel", "tcg", "-m", mem, "-smp", "2",
		"-kernel", strings.TrimSpace(string(kernelOut)), "-initrd", initrd, "-append", "console=ttyS0 quiet panic=-1",
		"-netdev", netdev, "-device", "e1000,netdev=n0", "-display", "none", "-serial", "file:" + n.Console, "-monitor", "none", "-no-reboot"}
	if link := opts.Link; link != nil {
		args = append(args, link.qemuArgs()...)
	}
	n.cmd = tiedToUs(exec.Command("qemu-system-x86_64", args...))
	Logf("booting node %s (qemu TCG)", n.Name)
	if err := n.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute) // a hang guard: a TCG boot takes ~40 s alone, minutes beside a second VM on two busy cores
	for {
		if _, code, err := n.Exec("true"); err == nil && code == 0 {
			break
		}
		if time.Now().After(deadline) {
			n.Stop()
			return fmt.Errorf("node %s: agent not up; console %s, its end:\n%s", n.Name, n.Console, tail(n.Console, 30))
		}
		time.Sleep(time.Second)
	}
	return nil
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// Exec runs a shell command in the VM and returns its output and exit code.
func (n *Node) Exec(cmd string) (string, int, error) {
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/exec", n.agentPort), "text/plain", strings.NewReader(cmd))
	if err != nil {
		return "", -1, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	code, _ := strconv.Atoi(resp.Header.Get("X-Exit-Code"))
	return string(out), code, err
}

// MustExec is Exec that fails on a non-zero exit.
func (n *Node) MustExec(cmd string) (string, error) {
	out, code, err := n.Exec(cmd)
	if err == nil && code != 0 {
		err = fmt.Errorf("%q exited %d: %s", cmd, code, out)
	}
	return out, err
}

// Ask connects from netns ns in the VM to target and returns the reply line.
func (n *Node) Ask(ns, proto, target string) (string, error) { return n.AskFrom(ns, proto, "", target) }

// AskFrom is Ask from a given source address.
func (n *Node) AskFrom(ns, proto, source, target string) (string, error) {
	q := url.Values{"ns": {ns}, "proto": {proto}, "target": {target}, "source": {source}}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/ask?%s", n.agentPort, q.Encode()))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s", strings.TrimSpace(string(body)))
	}
	return strings.TrimSpace(string(body)), nil
}

// Stop powers the VM off.
func (n *Node) Stop() {
	if n.cmd != nil && n.cmd.Process != nil {
		_ = n.cmd.Process.Kill()
		_, _ = n.cmd.Process.Wait()
	}
}

// KubeRouterCommand is kube-router run as a service proxy only, as a kube-router
// DaemonSet beside another CNI runs it: no routing, no network policy, every Service
// masqueraded (the ClusterIP path ours and kube-proxy's IPVS mode take), NodePorts on
// every node address, the periodic sync kept out of a test's way; health on a port
// clear of kube-proxy's 10256 and ours, no metrics listener.
func KubeRouterCommand(node string) []string {
	return []string{"/usr/local/bin/kube-router", "--run-router=false", "--run-firewall=false", "--run-service-proxy=true",
		"--kubeconfig=/" + StockKubeProxyDir + "/kubeconfig", "--hostname-override=" + node, "--masquerade-all",
		"--nodeport-bindon-all-ip", "--ipvs-sync-period=1m", "--health-port=20244", "--metrics-port=0"}
}

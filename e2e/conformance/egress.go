package conformance

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/splice"
)

// KubeletProxy is how the apiserver on the host reaches each node's kubelet (exec, logs,
// port-forward). The nodes' addresses live on their link, which the host is not on;
// each node's qemu forwards a host loopback port to its kubelet's 10250. The apiserver's
// egress selector (EgressSelectorConfiguration, the `cluster` selection, HTTPConnect
// over a unix socket: the mechanism a konnectivity server serves) sends every connection
// to a node here as `CONNECT host:port`, and the proxy dials the forwarded port of the
// node that host names (its name or its InternalIP). A connection to a pod address (the
// apiserver's pod and service proxy subresources) goes to the agent of the node whose
// podCIDR holds it, as a CONNECT the agent dials from the node. Anything else is
// refused: the apiserver reaches nothing through it but the kubelets and the pods.
type KubeletProxy struct {
	l     net.Listener
	mu    sync.Mutex
	ports map[string]string       // "host:port" the apiserver asks for -> "127.0.0.1:P"
	pods  map[netip.Prefix]string // podCIDR -> the node agent's "127.0.0.1:P"
	wg    sync.WaitGroup
}

// NewKubeletProxy listens on the unix socket path.
func NewKubeletProxy(path string) (*KubeletProxy, error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	p := &KubeletProxy{l: l, ports: map[string]string{}, pods: map[netip.Prefix]string{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Route sends CONNECTs to each of the node's addresses on kubeletPort (10250) to
// 127.0.0.1:hostPort.
func (p *KubeletProxy) Route(hostPort int, kubeletPort int, addrs ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range addrs {
		p.ports[net.JoinHostPort(a, fmt.Sprint(kubeletPort))] = fmt.Sprintf("127.0.0.1:%d", hostPort)
	}
}

// RoutePods sends CONNECTs to addresses in podCIDR through the node agent at agent
// ("127.0.0.1:P", its /exec port, which also answers CONNECT).
func (p *KubeletProxy) RoutePods(podCIDR netip.Prefix, agent string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods[podCIDR.Masked()] = agent
}

// Close stops listening (connections already spliced run to their end).
func (p *KubeletProxy) Close() error {
	err := p.l.Close()
	p.wg.Wait()
	return err
}

func (p *KubeletProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

// target is where a CONNECT to addr goes, if anywhere: a kubelet's forwarded port
// directly, or a pod address through its node's agent (via).
func (p *KubeletProxy) target(addr string) (to, via string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.ports[addr]; ok {
		return t, "", true
	}
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		for cidr, agent := range p.pods {
			if cidr.Contains(ap.Addr()) {
				return addr, agent, true
			}
		}
	}
	return "", "", false
}

// dial connects to a target, through an agent's CONNECT when via is set.
func dial(to, via string) (net.Conn, error) {
	if via == "" {
		return net.Dial("tcp", to)
	}
	c, err := net.Dial("tcp", via)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", to, to)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("agent %s: CONNECT %s: %s", via, to, res.Status)
	}
	// What the target sent right after the agent's answer is in br already.
	return &bufferedConn{Conn: c, r: br}, nil
}

// bufferedConn reads through the reader that holds what arrived with the CONNECT answer.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite half-closes the underlying connection.
func (b *bufferedConn) CloseWrite() error {
	splice.CloseWrite(b.Conn)
	return nil
}

func (p *KubeletProxy) handle(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		fmt.Fprintf(c, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	to, via, ok := p.target(req.Host)
	if !ok {
		fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		return
	}
	up, err := dial(to, via)
	if err != nil {
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	if _, err := fmt.Fprintf(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	splice.Join(c, br, up)
}

// EgressSelectorConfig is the apiserver's --egress-selector-config-file for a proxy on
// socket: the `cluster` selection (traffic to nodes and pods) through it, the control
// plane and etcd direct.
func EgressSelectorConfig(socket string) string {
	return `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: ` + socket + `
- name: controlplane
  connection: {proxyProtocol: Direct}
- name: etcd
  connection: {proxyProtocol: Direct}
`
}

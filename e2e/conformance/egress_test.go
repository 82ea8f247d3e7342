package conformance

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
)

// serveLoopback accepts on a loopback port until the test ends, handing each
// connection (closed after) to handle, and returns the listener's address.
func serveLoopback(t *testing.T, handle func(net.Conn)) *net.TCPAddr {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr)
}

// echoServer answers each connection with "hello " and whatever it reads.
func echoServer(t *testing.T) int {
	return serveLoopback(t, func(c net.Conn) {
		fmt.Fprint(c, "hello ")
		_, _ = io.Copy(c, c)
	}).Port
}

// connect sends a CONNECT as the apiserver's egress dialer does and returns the
// status code and, on 200, the tunnel.
func connect(t *testing.T, sock, addr string) (int, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", addr)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, c, br
}

func TestKubeletProxy(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "egress.sock")
	p, err := NewKubeletProxy(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	port := echoServer(t)
	p.Route(port, 10250, "node-1", "192.168.100.11")

	for _, addr := range []string{"node-1:10250", "192.168.100.11:10250"} {
		code, c, br := connect(t, sock, addr)
		if code != 200 {
			t.Fatalf("CONNECT %s: %d, want 200", addr, code)
		}
		fmt.Fprint(c, "ping\n")
		line, err := br.ReadString('\n')
		if err != nil || line != "hello ping\n" {
			t.Fatalf("through the tunnel to %s: %q %v", addr, line, err)
		}
	}
	// Only the kubelets: another port of the node, another node, a pod of no known
	// podCIDR, the host.
	for _, addr := range []string{"node-1:22", "192.168.100.12:10250", "10.244.0.5:8080", "127.0.0.1:" + fmt.Sprint(port)} {
		if code, _, _ := connect(t, sock, addr); code != 403 {
			t.Errorf("CONNECT %s: %d, want 403", addr, code)
		}
	}
}

// fakeAgent answers CONNECT as the node agent does, dialing port on loopback
// whatever the pod address asked, and records what was asked.
func fakeAgent(t *testing.T, port int, asked chan<- string) string {
	return serveLoopback(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil || req.Method != http.MethodConnect {
			return
		}
		asked <- req.Host
		up, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return
		}
		defer up.Close()
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\n\r\n")
		go func() { _, _ = io.Copy(up, br) }()
		_, _ = io.Copy(c, up)
	}).String()
}

func TestKubeletProxyToPods(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "egress.sock")
	p, err := NewKubeletProxy(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	asked := make(chan string, 4)
	p.RoutePods(netip.MustParsePrefix("10.244.1.0/24"), fakeAgent(t, echoServer(t), asked))
	code, c, br := connect(t, sock, "10.244.1.7:8080")
	if code != 200 {
		t.Fatalf("CONNECT to a pod of node-2's podCIDR: %d", code)
	}
	if got := <-asked; got != "10.244.1.7:8080" {
		t.Errorf("the agent was asked for %q", got)
	}
	fmt.Fprint(c, "ping\n")
	if line, err := br.ReadString('\n'); err != nil || line != "hello ping\n" {
		t.Fatalf("through the agent: %q %v", line, err)
	}
	if code, _, _ := connect(t, sock, "10.244.2.7:8080"); code != 403 {
		t.Errorf("a pod address in no routed podCIDR: %d, want 403", code)
	}
}

func TestEgressSelectorConfig(t *testing.T) {
	c := EgressSelectorConfig("/tmp/x/egress.sock")
	for _, want := range []string{"kind: EgressSelectorConfiguration", "- name: cluster", "proxyProtocol: HTTPConnect", "udsName: /tmp/x/egress.sock"} {
		if !strings.Contains(c, want) {
			t.Errorf("config lacks %q:\n%s", want, c)
		}
	}
}

package splice

import (
	"io"
	"net"
	"strings"
	"testing"
)

// TestJoin: bytes cross both ways, and one side's end reaches the other as EOF.
func TestJoin(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// The far end answers "got:" and what it read, once the client half-closes.
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		_, _ = io.WriteString(c, "got:"+string(b))
	}()
	far, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// The near side: a TCP connection the test writes to and half-closes.
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	go func() {
		c, err := l2.Accept()
		if err != nil {
			return
		}
		Join(c, c, far)
		c.Close()
		far.Close()
	}()
	cl, err := net.Dial("tcp", l2.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, _ = io.WriteString(cl, "ping")
	CloseWrite(cl)
	b, err := io.ReadAll(cl)
	if err != nil || !strings.HasPrefix(string(b), "got:ping") {
		t.Fatalf("through the join: %q %v", b, err)
	}
}

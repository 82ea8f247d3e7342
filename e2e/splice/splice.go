// Package splice joins two connections, as a CONNECT tunnel does: the node agent's
// CONNECT answer and the conformance harness's kubelet proxy both use it.
package splice

import (
	"io"
	"net"
)

// Join copies each way until both directions end, half-closing each side's write when
// its source ends. from is what to read a's bytes from (a itself, or a reader holding
// what arrived before the tunnel opened).
func Join(a net.Conn, from io.Reader, b net.Conn) {
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, from); CloseWrite(b); done <- struct{}{} }()
	go func() { _, _ = io.Copy(a, b); CloseWrite(a); done <- struct{}{} }()
	<-done
	<-done
}

// CloseWrite half-closes c when it can (a TCP or unix connection).
func CloseWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

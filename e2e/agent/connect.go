package main

import (
	"io"
	"net"
	"net/http"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/splice"
)

// connectOr answers CONNECT requests itself and passes the rest to next: a CONNECT to
// host:port dials it from the node's network namespace and splices the two. The
// conformance harness's kubelet proxy sends the apiserver's connections to pod
// addresses (its pod and service proxy subresources) through here, as a cluster's
// apiserver reaches pods over the node network.
func connectOr(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			next.ServeHTTP(w, r)
			return
		}
		up, err := net.DialTimeout("tcp", r.Host, 10*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer up.Close()
		hj, ok := w.(http.Hijacker)
		if !ok {
			http.Error(w, "no hijacking", http.StatusInternalServerError)
			return
		}
		c, buf, err := hj.Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		splice.Join(c, buf, up)
	})
}

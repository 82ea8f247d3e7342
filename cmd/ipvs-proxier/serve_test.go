package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestServeRetriesTheBind: with its port held by another process (the old pod during a
// takeover), the server logs the failure, keeps retrying, and serves once the port is
// freed; it stops with its context.
func TestServeRetriesTheBind(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := held.Addr().String()
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serveEvery(ctx, zap.New(core), "health", addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ours")
	}), 50*time.Millisecond)
	waitUntil(t, func() bool { return logs.FilterMessage("Cannot serve health; retrying").Len() >= 3 })
	held.Close()
	var body string
	waitUntil(t, func() bool {
		r, err := http.Get("http://" + addr + "/")
		if err != nil {
			return false
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		return true
	})
	if body != "ours" || logs.FilterMessage("Serving health").Len() != 1 {
		t.Errorf("body %q, %d Serving lines", body, logs.FilterMessage("Serving health").Len())
	}
	cancel()
	waitUntil(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil && strings.Contains(err.Error(), "refused")
	})
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

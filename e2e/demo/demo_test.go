package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// TestDemo runs `make demo` as a user does and drives what its quick start shows:
// kubectl with the kubeconfig it writes, a change the node follows (seen through
// `make demo-exec`), `ipvs-proxier status` and /metrics through the forwarded ports.
func TestDemo(t *testing.T) {
	harness.RequireE2E(t)
	dir := t.TempDir()
	env := append(os.Environ(), "IPVS_PROXIER_DEMO_DIR="+dir)
	demo := exec.Command("make", "-s", "demo")
	demo.Dir, demo.Env = harness.RepoRoot(), env
	out, err := demo.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	demo.Stderr = os.Stderr
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	// The quick start follows the "==> up:" line in a second write; its last line is
	// the curl of /metrics. Waiting for that line (not the "up" one) keeps the check
	// below from racing the pipe (a CI run once read "up" before the block arrived).
	up := make(chan string, 1)
	var mu sync.Mutex
	var printed strings.Builder
	output := func() string { mu.Lock(); defer mu.Unlock(); return printed.String() }
	go func() {
		sc := bufio.NewScanner(out)
		seenUp := false
		for sc.Scan() {
			mu.Lock()
			printed.WriteString(sc.Text() + "\n")
			mu.Unlock()
			seenUp = seenUp || strings.HasPrefix(sc.Text(), "==> up:")
			if seenUp && strings.Contains(sc.Text(), "curl -s http://") {
				up <- sc.Text()
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	defer func() {
		stop := exec.Command("make", "-s", "demo-down")
		stop.Dir, stop.Env = harness.RepoRoot(), env
		if b, err := stop.CombinedOutput(); err != nil {
			t.Errorf("make demo-down: %v\n%s", err, b)
		}
		done := make(chan error, 1)
		go func() { done <- demo.Wait() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = demo.Process.Kill()
			t.Error("the demo did not stop within 60 s of make demo-down")
		}
	}()
	select {
	case <-up:
	case <-time.After(15 * time.Minute):
		t.Fatalf("the demo was not up within 15 min:\n%s", output())
	}
	var st state
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil || json.Unmarshal(b, &st) != nil {
		t.Fatalf("state.json: %v %s", err, b)
	}
	for _, want := range []string{"export KUBECONFIG=" + st.Kubeconfig, "make demo-exec CMD='ipvsadm -Ln'", "status --address " + st.Metrics, st.Metrics + "/metrics"} {
		if !strings.Contains(output(), want) {
			t.Errorf("the demo does not print %q:\n%s", want, output())
		}
	}

	run := func(name string, args ...string) string {
		t.Helper()
		c := exec.Command(name, args...)
		c.Dir, c.Env = harness.RepoRoot(), append(env, "KUBECONFIG="+st.Kubeconfig)
		b, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, b)
		}
		return string(b)
	}
	if got := run(st.Kubectl, "get", "svc", "-n", "default", "web"); !strings.Contains(got, "10.96.100.10") {
		t.Errorf("kubectl get svc web:\n%s", got)
	}
	nodeFollows := func(what string, ok func(string) bool) {
		t.Helper()
		var table string
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if table = run("make", "-s", "demo-exec", "CMD=ipvsadm -Ln -t 10.96.100.10:80"); ok(table) {
				return
			}
			time.Sleep(time.Second)
		}
		t.Fatalf("%s: the node did not follow within 60 s:\n%s", what, table)
	}
	// Weight-1 real servers; a removed one drains at weight 0 (graceful termination).
	serving := func(s string) int { return strings.Count(s, "Masq    1 ") }
	nodeFollows("demo.yaml", func(s string) bool { return serving(s) == 2 })
	run(st.Kubectl, "-n", "default", "patch", "endpointslice", "web-1", "--type=json", "-p", `[{"op":"remove","path":"/endpoints/1"}]`)
	nodeFollows("one endpoint removed", func(s string) bool { return serving(s) == 1 })

	run("make", "-s", "build")
	if got := run("bin/ipvs-proxier", "status", "--address", st.Metrics); !strings.Contains(got, "on node node-1") || !strings.Contains(got, "healthy, ready") {
		t.Errorf("ipvs-proxier status:\n%s", got)
	}
	resp, err := http.Get("http://" + st.Metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "kubeproxy_sync_proxy_rules_duration_seconds_count") {
		t.Errorf("/metrics through %s lacks kubeproxy_sync_proxy_rules_duration_seconds:\n%.500s", st.Metrics, body)
	}
}

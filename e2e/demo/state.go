package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// state is what a running demo leaves for the user's other terminals: where the node's
// agent, the daemon's forwarded ports and the kubeconfig are.
type state struct {
	Agent      string `json:"agent"`
	Health     string `json:"health"`  // host address of the daemon's :10256
	Metrics    string `json:"metrics"` // host address of the daemon's 127.0.0.1:10249
	Kubeconfig string `json:"kubeconfig"`
	Kubectl    string `json:"kubectl"`
}

// stateDir is $IPVS_PROXIER_DEMO_DIR, or demo/ in the cache.
func stateDir() string {
	if d := os.Getenv("IPVS_PROXIER_DEMO_DIR"); d != "" {
		return d
	}
	return filepath.Join(harness.Cache(), "demo")
}

// writeState writes the kubeconfig and state.json into stateDir.
func writeState(cp *harness.ControlPlane, node *harness.Node, bins harness.Binaries) (state, error) {
	dir := stateDir()
	st := state{Agent: node.AgentURL(), Health: fmt.Sprintf("127.0.0.1:%d", node.Forwarded[10256]),
		Metrics: fmt.Sprintf("127.0.0.1:%d", node.Forwarded[10249]), Kubeconfig: filepath.Join(dir, "kubeconfig"), Kubectl: bins.Kubectl}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, err
	}
	if err := cp.WriteKubeconfig(st.Kubeconfig); err != nil {
		return st, err
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	return st, os.WriteFile(filepath.Join(dir, "state.json"), b, 0o644)
}

// execOnNode runs cmd on a running demo's node, prints its output and returns its exit
// code.
func execOnNode(cmd string) int {
	b, err := os.ReadFile(filepath.Join(stateDir(), "state.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo exec: is `make demo` running?", err)
		return 2
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		fmt.Fprintln(os.Stderr, "demo exec:", err)
		return 2
	}
	resp, err := http.Post(st.Agent+"/exec", "text/plain", strings.NewReader(cmd))
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo exec: is `make demo` running?", err)
		return 2
	}
	defer resp.Body.Close()
	_, _ = io.Copy(os.Stdout, resp.Body)
	code, _ := strconv.Atoi(resp.Header.Get("X-Exit-Code"))
	return code
}

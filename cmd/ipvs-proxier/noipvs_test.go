package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoIPVSSaysSoReal: on a kernel without IPVS (this host's) the daemon stops with
// "IPVS is not usable on this node" and the fix, before any sysctl; it once died on a
// bare ENOENT from /proc/sys/net/ipv4/vs/conntrack. It runs the daemon in a fresh
// network namespace, and only where the kernel really lacks IPVS.
func TestNoIPVSSaysSoReal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare -n")
	}
	if _, err := os.Stat("/proc/sys/net/ipv4/vs"); err == nil {
		t.Skip("this kernel has IPVS")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ipvs-proxier")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\n"+
		"users:\n- name: u\n  user: {token: x}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("unshare", "-n", bin, "--kubeconfig", kc, "--lock-file", filepath.Join(dir, "lock"),
		"--hostname-override", "n", "--log-format", "console").CombinedOutput()
	if err == nil {
		t.Fatalf("the daemon ran on a kernel without IPVS:\n%s", out)
	}
	if !strings.Contains(string(out), "IPVS is not usable on this node: /proc/sys/net/ipv4/vs is missing") ||
		!strings.Contains(string(out), "Fix: modprobe -a ip_vs") || strings.Contains(string(out), "no such file or directory") {
		t.Errorf("output:\n%s", out)
	}
}

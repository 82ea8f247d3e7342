package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage builds the image as `make image-oci` does and checks it: (in `make test-all`,
// built twice) the same digest both times (SOURCE_DATE_EPOCH); the binary where the
// DaemonSet runs it, every program the daemon execs and the operators' tools, and, run
// from its root filesystem in a fresh network and mount namespace, the binary answers,
// the iptables wrapper picks nft on a node with no rules and creates no table doing so.
func TestImage(t *testing.T) {
	if os.Getenv("IPVS_PROXIER_E2E") != "1" {
		t.Skip("set IPVS_PROXIER_E2E=1, or run `make image-oci` / `make e2e`")
	}
	b, err := newBuild("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first, second := filepath.Join(dir, "1.tar"), filepath.Join(dir, "2.tar")
	d1, err := b.writeArchive(first)
	if err != nil {
		t.Fatal(err)
	}
	// The second build proves the digest is reproducible; `make test-all` runs it.
	if os.Getenv("IPVS_PROXIER_TEST_ALL") == "1" {
		d2, err := b.writeArchive(second)
		if err != nil {
			t.Fatal(err)
		}
		if d1 != d2 {
			t.Errorf("two builds of one tree: %s and %s", d1, d2)
		}
	}
	t.Logf("image %s digest %s", b.tag, d1)

	img, err := tarball.ImageFromPath(first, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/usr/local/bin/ipvs-proxier" {
		t.Fatalf("config %+v %v", cf, err)
	}
	root := filepath.Join(dir, "root")
	if err := extract(mutate.Extract(img), root); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"usr/local/bin/ipvs-proxier", "usr/sbin/iptables-nft-restore", "usr/sbin/iptables-legacy-restore",
		"usr/sbin/ip6tables-nft-restore", "usr/sbin/ip6tables-legacy-restore", "usr/sbin/xtables-nft-multi", "usr/sbin/xtables-legacy-multi",
		"usr/sbin/modprobe", "usr/sbin/ipvsadm", "usr/sbin/ipset", "usr/sbin/conntrack", "usr/sbin/iptables-wrapper", "bin/sh"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
			t.Errorf("image lacks /%s", p)
		}
	}
	if target, err := os.Readlink(filepath.Join(root, "usr/sbin/iptables")); err != nil || target != "iptables-wrapper" {
		t.Errorf("/usr/sbin/iptables -> %q %v, want the wrapper", target, err)
	}
	if os.Geteuid() != 0 {
		t.Skip("running the image's programs needs root (chroot, namespaces)")
	}
	run := func(script string) string {
		t.Helper()
		// A fresh network namespace (empty iptables) and a mount namespace for /proc.
		cmd := exec.Command("unshare", "-n", "-m", "sh", "-c", "mount -t proc proc "+root+"/proc && chroot "+root+" sh -c '"+script+"'")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return string(out)
	}
	if out := run("/usr/local/bin/ipvs-proxier version"); strings.TrimSpace(out) != b.release {
		t.Errorf("ipvs-proxier version in the image: %q, want %s", out, b.release)
	}
	// After the first call the plain names run Debian's flavoured programs
	// (iptables-nft-restore, not iptables-restore-nft: kube-proxy calls iptables-restore).
	out := run("iptables -V; iptables-restore -V; ip6tables-save -V; readlink /usr/sbin/iptables; readlink /usr/sbin/ip6tables-restore; cat /proc/net/ip_tables_names; iptables-nft-save | grep -c '^\\*' || true")
	for _, want := range []string{"(nf_tables)", "iptables-restore v", "ip6tables-save v", "iptables-nft\n", "ip6tables-nft-restore\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("wrapper on an empty node: output lacks %q:\n%s", want, out)
		}
	}
	// No legacy table (ip_tables_names empty) and no nft table ("0" tables saved) made by
	// the detection; the wrapper then ran `iptables -V` through the nft flavour.
	if lines := strings.Split(strings.TrimSpace(out), "\n"); lines[len(lines)-1] != "0" || strings.Contains(out, "filter\n") {
		t.Errorf("detection created a table:\n%s", out)
	}
	// A node whose kubelet uses legacy iptables (its hint chain in the legacy mangle
	// table): the wrapper picks legacy. A fresh root: the first run relinked the names.
	root = filepath.Join(dir, "root2")
	if err := extract(mutate.Extract(img), root); err != nil {
		t.Fatal(err)
	}
	out = run("iptables-legacy -t mangle -N KUBE-IPTABLES-HINT && iptables -V && readlink /usr/sbin/ip6tables")
	if !strings.Contains(out, "(legacy)") || !strings.Contains(out, "ip6tables-legacy") {
		t.Errorf("wrapper on a legacy node:\n%s", out)
	}
	// A read-only root, as the DaemonSet mounts it (readOnlyRootFilesystem): the wrapper
	// cannot relink, and still runs the flavoured program, every time.
	root = filepath.Join(dir, "root3")
	if err := extract(mutate.Extract(img), root); err != nil {
		t.Fatal(err)
	}
	// The runtime gives the container its /dev; the node's stands in.
	ro := exec.Command("unshare", "-n", "-m", "sh", "-c", "mount --bind "+root+" "+root+" && mount -o remount,bind,ro "+root+
		" && mount -t proc proc "+root+"/proc && mount --rbind /dev "+root+"/dev && chroot "+root+
		" sh -c 'iptables -V && iptables-save -V && readlink /usr/sbin/iptables'")
	b3, err := ro.CombinedOutput()
	if out := string(b3); err != nil || !strings.Contains(out, "(nf_tables)") || !strings.Contains(out, "iptables-nft-save v") ||
		strings.Contains(out, "Read-only") || !strings.HasSuffix(strings.TrimSpace(out), "iptables-wrapper") {
		t.Errorf("wrapper on a read-only root: %v\n%s", err, out)
	}
}

// extract writes a flattened image filesystem into dir.
func extract(rc io.ReadCloser, dir string) error {
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				var f *os.File
				if f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o7777); err == nil {
					_, err = io.Copy(f, tr)
					_ = f.Close()
				}
			}
		case tar.TypeSymlink:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				_ = os.Remove(p)
				err = os.Symlink(h.Linkname, p)
			}
		case tar.TypeLink:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				_ = os.Remove(p)
				err = os.Link(filepath.Join(dir, h.Linkname), p)
			}
		}
		if err != nil {
			return err
		}
	}
}

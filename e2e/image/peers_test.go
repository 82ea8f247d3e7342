package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestPeerPackages: kube-proxy's image adds nft (its nftables mode) and kube-router's
// adds ip to the Dockerfile's packages, which hold the rest of what each execs; the
// Dockerfile's own list is left as it is.
func TestPeerPackages(t *testing.T) {
	b, err := newBuild("")
	if err != nil {
		t.Fatal(err)
	}
	before := append([]string(nil), b.packages...)
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"kube-proxy", b.withPackages(kubeProxyPackages).packages, []string{"iptables", "ipset", "conntrack", "kmod", "nftables"}},
		{"kube-router", b.withPackages(kubeRouterPackages).packages, []string{"iptables", "ipset", "conntrack", "iproute2"}},
	} {
		for _, p := range tc.want {
			if !slices.Contains(tc.got, p) {
				t.Errorf("%s's image lacks the package %s: %v", tc.name, p, tc.got)
			}
		}
	}
	if !slices.Equal(b.packages, before) {
		t.Errorf("the Dockerfile's packages changed to %v", b.packages)
	}
}

// TestPeerImages builds kube-proxy's and kube-router's images (a stand-in binary: the
// layout is what is checked) and looks for every program each execs where PATH finds it.
func TestPeerImages(t *testing.T) {
	if os.Getenv("IPVS_PROXIER_E2E") != "1" {
		t.Skip("set IPVS_PROXIER_E2E=1, or run `make e2e`")
	}
	b, err := newBuild("example.invalid/peer:test")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapped := []string{"usr/sbin/iptables", "usr/sbin/iptables-save", "usr/sbin/iptables-restore", "usr/sbin/iptables-wrapper"}
	for _, tc := range []struct {
		name, entry string
		need        []string
	}{
		{"kube-proxy", "/usr/local/bin/kube-proxy", append([]string{"usr/sbin/nft", "usr/sbin/ipset", "usr/sbin/conntrack", "usr/sbin/modprobe"}, wrapped...)},
		{"kube-router", "/usr/local/bin/kube-router", append([]string{"usr/sbin/ipset", "usr/sbin/conntrack", "usr/bin/ip", "etc/iproute2/rt_tables"}, wrapped...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, tc.name+".tar")
			img := b.kubeProxyImage
			if tc.name == "kube-router" {
				img = b.kubeRouterImage
			}
			i, err := img(self, "test")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.write(out, i); err != nil {
				t.Fatal(err)
			}
			loaded, err := tarball.ImageFromPath(out, nil)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := loaded.ConfigFile()
			if err != nil || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != tc.entry {
				t.Fatalf("entrypoint %+v %v, want %s", cf, err, tc.entry)
			}
			root := filepath.Join(dir, "root")
			if err := extract(mutate.Extract(loaded), root); err != nil {
				t.Fatal(err)
			}
			for _, p := range append([]string{tc.entry[1:]}, tc.need...) {
				if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
					t.Errorf("%s's image lacks /%s", tc.name, p)
				}
			}
		})
	}
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The upstream e2e suite's images, built here without a registry (e2e/conformance): one
// docker archive holding every image under the exact names test/utils/image/manifest.go
// gives, so the kubelet finds them in containerd and pulls nothing.

// suitePackages are the Debian packages of the shared base: the tools agnhost's
// Alpine image carries that the Service tests exec (curl, nc, dig, ip/ss, bash, socat,
// and busybox's wget and ping, which Alpine's base has), nginx for the tests that only
// need a web server running, and iptables and conntrack for the distroless-iptables
// stand-in (a privileged hostNetwork pod that reads conntrack).
var suitePackages = []string{"bash", "ca-certificates", "conntrack", "curl", "dnsutils", "iproute2", "iptables",
	"iputils-ping", "netcat-openbsd", "nginx", "procps", "socat", "wget"}

// suiteImage is one image of the archive.
type suiteImage struct {
	tag        string
	files      []layerFile // on top of the base (none for busybox, which has no base)
	links      [][2]string
	entrypoint []string
	cmd        []string
	noBase     bool
}

// parseSuiteSpec reads -suite's value: comma-separated ROLE=VALUE pairs, where the
// roles are agnhost, regression (the binaries, built from the pinned module), coredns
// (built from the version kubeadm deploys), busybox (a static busybox), and the tags
// agnhost-tag, busybox-tag, nginx-tag, iptables-tag, regression-tag, coredns-tag,
// pause-tag.
func parseSuiteSpec(spec string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("-suite: %q is not ROLE=VALUE", kv)
		}
		out[k] = v
	}
	for _, k := range []string{"agnhost", "regression", "coredns", "busybox", "agnhost-tag", "busybox-tag", "nginx-tag", "iptables-tag",
		"regression-tag", "coredns-tag", "pause-tag"} {
		if out[k] == "" {
			return nil, fmt.Errorf("-suite: %s= is missing", k)
		}
	}
	return out, nil
}

// busyboxLinks are the applet links of a busybox at bin/busybox.
func busyboxLinks(applets []string) [][2]string {
	var links [][2]string
	for _, a := range applets {
		if a != "" && a != "busybox" {
			links = append(links, [2]string{"bin/" + a, "busybox"})
		}
	}
	sort.Slice(links, func(i, j int) bool { return links[i][0] < links[j][0] })
	return links
}

// suiteImages lists the archive's images from the spec.
func suiteImages(spec map[string]string, applets []string) ([]suiteImage, error) {
	read := func(role string) ([]byte, error) { return os.ReadFile(spec[role]) }
	agnhost, err := read("agnhost")
	if err != nil {
		return nil, err
	}
	regression, err := read("regression")
	if err != nil {
		return nil, err
	}
	busybox, err := read("busybox")
	if err != nil {
		return nil, err
	}
	coredns, err := read("coredns")
	if err != nil {
		return nil, err
	}
	return []suiteImage{
		// agnhost's Dockerfile: /agnhost, the agnhost-2 link the entrypoint tests use,
		// /uploads for netexec, ENTRYPOINT /agnhost, CMD pause.
		{tag: spec["agnhost-tag"], files: []layerFile{{"agnhost", 0o755, agnhost}, {"uploads/.keep", 0o644, nil}},
			links: [][2]string{{"agnhost-2", "agnhost"}}, entrypoint: []string{"/agnhost"}, cmd: []string{"pause"}},
		{tag: spec["nginx-tag"], entrypoint: []string{"/usr/sbin/nginx", "-g", "daemon off;"}},
		{tag: spec["iptables-tag"], cmd: []string{"sleep", "infinity"}},
		{tag: spec["regression-tag"], files: []layerFile{{"regression-issue-74839", 0o755, regression}},
			entrypoint: []string{"/regression-issue-74839"}},
		// CoreDNS's image is its static binary alone, run as /coredns.
		{tag: spec["coredns-tag"], noBase: true, files: []layerFile{{"coredns", 0o755, coredns}}, entrypoint: []string{"/coredns"}},
		{tag: spec["busybox-tag"], noBase: true, files: []layerFile{{"bin/busybox", 0o755, busybox}},
			links: busyboxLinks(applets), cmd: []string{"sh"}},
	}, nil
}

// writeSuite writes the archive of the suite's images and the pause image.
func (b *build) writeSuite(out, specText string, applets []string) error {
	spec, err := parseSuiteSpec(specText)
	if err != nil {
		return err
	}
	images, err := suiteImages(spec, applets)
	if err != nil {
		return err
	}
	tools := *b
	tools.packages = suitePackages
	rootfs, err := tools.rootfs()
	if err != nil {
		return err
	}
	base, err := tarball.LayerFromFile(rootfs)
	if err != nil {
		return err
	}
	refs := map[name.Reference]v1.Image{}
	for _, im := range images {
		var layers []v1.Layer
		if !im.noBase {
			layers = append(layers, base)
		}
		if len(im.files) > 0 || len(im.links) > 0 {
			top, err := b.layer(im.files, im.links)
			if err != nil {
				return err
			}
			layers = append(layers, top)
		}
		img, err := b.assemble(func(c *v1.Config) {
			c.Entrypoint, c.Cmd = im.entrypoint, im.cmd
			c.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		}, layers...)
		if err != nil {
			return err
		}
		ref, err := name.NewTag(im.tag)
		if err != nil {
			return err
		}
		refs[ref] = img
	}
	pause, err := b.pauseImage()
	if err != nil {
		return err
	}
	pref, err := name.NewTag(spec["pause-tag"])
	if err != nil {
		return err
	}
	refs[pref] = pause
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return tarball.MultiRefWriteToFile(out, refs)
}

package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// suite is the Debian release of the Dockerfile's base image (debian:bookworm-slim).
const suite = "bookworm"

// build holds what the image is made of.
type build struct {
	repo     string // the main module's root
	tag      string
	release  string
	packages []string
	epoch    time.Time
}

func newBuild(tag string) (*build, error) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		return nil, err
	}
	b := &build{repo: repo}
	mk, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`(?m)^RELEASE := (\S+)$`).FindSubmatch(mk)
	if m == nil {
		return nil, fmt.Errorf("no RELEASE in the Makefile")
	}
	b.release = string(m[1])
	b.tag = tag
	if b.tag == "" {
		b.tag = "ghcr.io/ipvs-proxier/ipvs-proxier:" + b.release
	}
	if b.packages, err = dockerfilePackages(filepath.Join(repo, "Dockerfile")); err != nil {
		return nil, err
	}
	b.epoch, err = sourceDateEpoch(repo)
	return b, err
}

// dockerfilePackages returns the packages the Dockerfile's final stage installs: one list
// for both builds, so `make image` and `make image-oci` hold the same programs.
func dockerfilePackages(path string) ([]string, error) {
	df, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	stages := regexp.MustCompile(`(?m)^FROM `).Split(string(df), -1)
	m := regexp.MustCompile(`apt-get install[^\n]*?--no-install-recommends ([a-z0-9 .+-]+)`).FindStringSubmatch(stages[len(stages)-1])
	if m == nil {
		return nil, fmt.Errorf("%s: the final stage installs no packages", path)
	}
	return strings.Fields(m[1]), nil
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH, else the time of the last commit that changed
// the Dockerfile (what the root filesystem is made from): stable across other commits,
// so the cached root filesystem is reused until the package list changes.
func sourceDateEpoch(repo string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%ct", "--", "Dockerfile").Output()
		if err == nil && len(strings.TrimSpace(string(out))) == 0 { // a shallow clone may not know
			out, err = exec.Command("git", "-C", repo, "log", "-1", "--format=%ct").Output()
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH unset and no git commit time: %w", err)
		}
		s = strings.TrimSpace(string(out))
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// cacheDir is where root filesystems are kept between builds.
func cacheDir() string {
	if d := os.Getenv("IPVS_PROXIER_CACHE"); d != "" {
		return filepath.Join(d, "image")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "ipvs-proxier", "image")
}

// rootfs returns a tar of the Debian root filesystem, made once per package list and
// epoch. mmdebstrap clamps every timestamp to SOURCE_DATE_EPOCH; docs, man pages,
// locales and the apt lists are left out, as debian:*-slim does.
func (b *build) rootfs() (string, error) {
	h := sha256.Sum256([]byte(suite + " " + strings.Join(b.packages, ",") + " " + b.epoch.String()))
	out := filepath.Join(cacheDir(), "rootfs-"+hex.EncodeToString(h[:8])+".tar")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	// mmdebstrap is a host package: the one list (e2e/hostdeps) installs it.
	if o, err := exec.Command(filepath.Join(b.repo, "e2e/hostdeps/install.sh")).CombinedOutput(); err != nil {
		return "", fmt.Errorf("e2e/hostdeps/install.sh: %w\n%s", err, o)
	}
	if err := os.MkdirAll(cacheDir(), 0o755); err != nil {
		return "", err
	}
	tmp := strings.TrimSuffix(out, ".tar") + ".tmp.tar" // mmdebstrap picks its output format from the name
	fmt.Fprintf(os.Stderr, "image: mmdebstrap %s with %s (about a minute, cached after)\n", suite, strings.Join(b.packages, " "))
	cmd := exec.Command("mmdebstrap", "--variant=minbase", "--include="+strings.Join(b.packages, ","),
		`--aptopt=Acquire::Check-Valid-Until "false"`,
		"--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
		"--dpkgopt=path-exclude=/usr/share/locale/*", "--dpkgopt=path-exclude=/usr/share/info/*",
		`--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*`,
		suite, tmp,
		"deb http://deb.debian.org/debian "+suite+" main", "deb http://deb.debian.org/debian "+suite+"-updates main",
		"deb http://deb.debian.org/debian-security "+suite+"-security main")
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(b.epoch.Unix(), 10))
	if o, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mmdebstrap: %w\n%s", err, lastLines(o, 20))
	}
	return out, os.Rename(tmp, out)
}

// binary builds the static daemon as the Dockerfile does.
func (b *build) binary(dir string) (string, error) {
	out := filepath.Join(dir, "ipvs-proxier")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+b.release, "-o", out, "./cmd/ipvs-proxier")
	cmd.Dir = b.repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, o)
	}
	return out, nil
}

// layerFile is one regular file of a layer.
type layerFile struct {
	name string
	mode int64
	data []byte
}

// layer builds a layer of files and symlinks (name -> target), every timestamp the epoch.
func (b *build) layer(files []layerFile, links [][2]string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: b.epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	for _, l := range links {
		if err := tw.WriteHeader(&tar.Header{Name: l[0], Linkname: l[1], Typeflag: tar.TypeSymlink,
			Mode: 0o777, ModTime: b.epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

// topLayer holds the program at path and the iptables wrapper, with the six plain
// iptables names linked to the wrapper: the first call picks the node's flavour.
func (b *build) topLayer(path, bin string) (v1.Layer, error) {
	wrapper, err := os.ReadFile(filepath.Join(b.repo, "e2e/image/iptables-wrapper"))
	if err != nil {
		return nil, err
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var links [][2]string
	for _, t := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
		links = append(links, [2]string{"usr/sbin/" + t, "iptables-wrapper"})
	}
	return b.layer([]layerFile{{path, 0o755, exe}, {"usr/sbin/iptables-wrapper", 0o755, wrapper}}, links)
}

// image assembles the image.
func (b *build) image() (v1.Image, error) {
	tmp, err := os.MkdirTemp("", "image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin, err := b.binary(tmp)
	if err != nil {
		return nil, err
	}
	return b.onBase("/usr/local/bin/ipvs-proxier", bin, b.release)
}

// onBase is the Debian root filesystem with the program at path (and the iptables
// wrapper) on top, run as the entrypoint.
func (b *build) onBase(path, bin, version string) (v1.Image, error) {
	rootfs, err := b.rootfs()
	if err != nil {
		return nil, err
	}
	base, err := tarball.LayerFromFile(rootfs)
	if err != nil {
		return nil, err
	}
	top, err := b.topLayer(strings.TrimPrefix(path, "/"), bin)
	if err != nil {
		return nil, err
	}
	return b.assemble(func(c *v1.Config) {
		c.Entrypoint = []string{path}
		c.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		c.Labels = map[string]string{"org.opencontainers.image.version": version,
			"org.opencontainers.image.source": "https://github.com/ipvs-proxier/ipvs-proxier"}
	}, base, top)
}

// assemble is an amd64 Linux image of layers, in order, whose config configure sets,
// created at b.epoch so that two builds have one digest.
func (b *build) assemble(configure func(*v1.Config), layers ...v1.Layer) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	configure(&cf.Config)
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: b.epoch})
}

// writeArchive writes the image as a docker archive and returns its digest.
func (b *build) writeArchive(out string) (string, error) {
	img, err := b.image()
	if err != nil {
		return "", err
	}
	return b.write(out, img)
}

// write writes img as a docker archive tagged b.tag and returns its digest.
func (b *build) write(out string, img v1.Image) (string, error) {
	ref, err := name.NewTag(b.tag)
	if err != nil {
		return "", err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return "", err
	}
	d, err := img.Digest()
	return d.String(), err
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Command image builds the ipvs-proxier container image without a container engine
// (none runs on the machines that build and test this project): a Debian root
// filesystem made by mmdebstrap with the Dockerfile's packages, the static binary and
// the iptables wrapper as a second layer, assembled into a docker archive (`docker load`,
// `ctr images import`) with go-containerregistry. With SOURCE_DATE_EPOCH (default: the
// Dockerfile's last commit time) the same inputs give the same image digest.
//
//	go run . -out FILE [-tag REF]
//	go run . -out FILE -tag REF -pause             the pod sandbox image (e2e kubelet tier)
//	go run . -out FILE -tag REF -kube-proxy BIN    stock kube-proxy on the same base
//	go run . -out FILE -tag REF -kube-router BIN   kube-router on the same base
//	go run . -out FILE -suite SPEC                 the upstream e2e suite's images (suite.go)
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func (b *build) writeWith(out string, image func() (v1.Image, error)) (string, error) {
	img, err := image()
	if err != nil {
		return "", err
	}
	return b.write(out, img)
}

func main() {
	out := flag.String("out", "", "docker archive to write")
	tag := flag.String("tag", "", "image reference (default ghcr.io/ipvs-proxier/ipvs-proxier:RELEASE from the Makefile)")
	pause := flag.Bool("pause", false, "build the pod sandbox image instead")
	kubeProxy := flag.String("kube-proxy", "", "build a kube-proxy image from this binary instead")
	kubeRouter := flag.String("kube-router", "", "build a kube-router image from this binary instead")
	suiteSpec := flag.String("suite", "", "build the upstream e2e suite's images instead (ROLE=VALUE,...: see suite.go)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "image: -out FILE is required")
		os.Exit(2)
	}
	b, err := newBuild(*tag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	if *suiteSpec != "" {
		if err := writeSuiteArchive(b, *out, *suiteSpec); err != nil {
			fmt.Fprintln(os.Stderr, "image:", err)
			os.Exit(1)
		}
		fmt.Println(*out)
		return
	}
	var digest string
	switch {
	case *pause:
		digest, err = b.writeWith(*out, b.pauseImage)
	case *kubeProxy != "":
		digest, err = b.writeWith(*out, func() (v1.Image, error) { return b.kubeProxyImage(*kubeProxy, b.tag) })
	case *kubeRouter != "":
		digest, err = b.writeWith(*out, func() (v1.Image, error) { return b.kubeRouterImage(*kubeRouter, b.tag) })
	default:
		digest, err = b.writeArchive(*out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s %s %s\n", *out, b.tag, digest)
}

// writeSuiteArchive builds the suite's archive, with the applets the given busybox lists.
func writeSuiteArchive(b *build, out, spec string) error {
	parsed, err := parseSuiteSpec(spec)
	if err != nil {
		return err
	}
	list, err := exec.Command(parsed["busybox"], "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %w", parsed["busybox"], err)
	}
	return b.writeSuite(out, spec, strings.Fields(string(list)))
}

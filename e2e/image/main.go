// Command image builds the ipvs-proxier container image without a container engine
// (none runs on the machines that build and test this project): a Debian root
// filesystem made by mmdebstrap with the Dockerfile's packages, the static binary and
// the iptables wrapper as a second layer, assembled into a docker archive (`docker load`,
// `ctr images import`) with go-containerregistry. With SOURCE_DATE_EPOCH (default: the
// Dockerfile's last commit time) the same inputs give the same image digest.
//
//	go run . -out FILE [-tag REF]
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("out", "", "docker archive to write")
	tag := flag.String("tag", "", "image reference (default ghcr.io/ipvs-proxier/ipvs-proxier:RELEASE from the Makefile)")
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
	digest, err := b.writeArchive(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s %s %s\n", *out, b.tag, digest)
}

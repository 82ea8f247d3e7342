// Command run is `make conformance`: it builds a cluster of one shape (e2e/conformance's
// README says how), runs the upstream Service e2e suite against it once per proxy, and
// writes docs/conformance.md and docs/conformance.csv (docs/conformance-SHAPE.* for a
// shape other than ipv4).
//
//	go run ./conformance/run [-shape ipv4|dual-stack|ipv6-first|three-zones] [-proxies kube-proxy-ipvs,kube-proxy-nftables,kube-router,ipvs-proxier,ipvs-proxier-nftables] [-focus REGEX] [-out DIR] [-procs N] [-keep]
//	go run ./conformance/run [-shape SHAPE] -from REPORTS-DIR[,DIR...] [-out DIR]
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/conformance"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

func shapeNames() string {
	var names []string
	for _, s := range conformance.Shapes {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

func main() {
	proxies := flag.String("proxies", strings.Join(conformance.Defaults(), ","), "the proxies to run the selection with, in order")
	focus := flag.String("focus", "", "run only the selected tests this regex also matches (a quick look; the docs are then not written)")
	out := flag.String("out", "", "write conformance.md and conformance.csv here (default: the repository's docs/)")
	procs := flag.Int("procs", 1, "e2e.test processes at once for the parallel tests ([Serial] and [Disruptive] always run alone)")
	keep := flag.Bool("keep", false, "leave the cluster up after the runs until interrupted (its kubeconfig is printed)")
	from := flag.String("from", "", "build no cluster: write the report from this run's reports folder (its dry run and each proxy's JUnit parts)")
	shape := flag.String("shape", conformance.DefaultShape, "the cluster's shape: "+shapeNames())
	flag.Parse()
	start := time.Now()
	code, err := run(options{proxies: strings.Split(*proxies, ","), focus: *focus, out: *out, procs: *procs, keep: *keep, from: *from, shape: *shape})
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		code = 1
	}
	harness.Logf("conformance: done in %v", time.Since(start).Round(time.Second))
	os.Exit(code)
}

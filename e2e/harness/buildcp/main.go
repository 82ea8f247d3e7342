// Command buildcp builds the control-plane binaries into the cache (make e2e-build).
package main

import (
	"fmt"
	"os"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

func main() {
	b, err := harness.BuildControlPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(b.APIServer, b.Etcd, b.KubeProxy)
}

// Command soak runs ipvs-proxier for hours on a real-kernel VM node against the real
// apiserver, as deploy/'s DaemonSet runs it, under a steady mixed churn of Services,
// EndpointSlices and the Node, with faults on a schedule and at random, and traffic
// through Services the churn never touches (`make soak`). It samples the daemon every
// minute, and at the end compares the kernel with `ipvs-proxier plan` of the final
// objects and judges growth, drains, Events, failed requests and recoveries. Results
// (a CSV, a chart and a page of verdicts) go to SOAK_OUT; the command exits 1 when a
// verdict fails. Settings: settingsFromEnv.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

func main() {
	benchkit.Main(func() error {
		set, err := settingsFromEnv()
		if err != nil {
			return err
		}
		vs, err := runSoak(context.Background(), set)
		if err != nil {
			return err
		}
		return failed(vs)
	})
}

// failed is an error naming the verdicts that failed, nil when all passed.
func failed(vs []verdict) error {
	var names []string
	for _, v := range vs {
		if !v.Pass {
			names = append(names, v.Name+" ("+v.Detail+")")
		}
	}
	if len(names) > 0 {
		return fmt.Errorf("soak: %d verdicts failed: %s", len(names), strings.Join(names, "; "))
	}
	return nil
}

// newRand is the soak's source of random choices beside the churn's (which Service a
// kernel edit takes).
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x50a4)) }

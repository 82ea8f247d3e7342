package benchkit

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// BenchmarkWorkloadGrow loads b.N Services of the workload into a fresh apiserver (no
// node), through the admin client (JSON), through LoaderClient (protobuf), and straight
// into etcd (etcdload.go), so the loader's rate can be compared within one run: `IPVS_PROXIER_E2E=1 go test -run '^$'
// -bench WorkloadGrow -benchtime 3000x ./benchkit`.
func BenchmarkWorkloadGrow(b *testing.B) {
	harness.RequireE2E(b)
	for _, enc := range []string{"json", "protobuf", "etcd"} {
		b.Run(enc, func(b *testing.B) {
			cp, err := StartControlPlane()
			if err != nil {
				b.Fatal(err)
			}
			defer cp.Stop()
			var c kubernetes.Interface = cp.Admin
			if enc != "json" {
				if c, err = LoaderClient(cp.RESTCfg); err != nil {
					b.Fatal(err)
				}
			}
			w := &Workload{Client: c, Node: NodeName, Endpoints: 4, Parallel: 16}
			if enc == "etcd" {
				w.Etcd = cp.EtcdURL
			}
			b.ResetTimer()
			if err := w.Grow(context.Background(), b.N); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "Services/s")
		})
	}
}

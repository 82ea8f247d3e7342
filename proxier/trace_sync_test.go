package proxier_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

func init() { proxier.SyncFake = syncFake }

// syncFake is the daemon's first sync of svcs and slices into a new fake kernel, with
// cfg's node: a Node object carries cfg's pod CIDRs, which the syncer reads from it
// (detectLocalMode NodeCIDR).
func syncFake(t *testing.T, cfg proxier.Config, svcs []*v1.Service, slices []*discovery.EndpointSlice) (*kernel.Fake, proxier.Config) {
	t.Helper()
	src := source.NewStaticSource()
	for _, s := range svcs {
		src.SetService(s)
	}
	for _, sl := range slices {
		if _, ok := src.SetSlice(sl); !ok {
			t.Fatalf("slice %s/%s names no Service", sl.Namespace, sl.Name)
		}
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: cfg.NodeName}}
	for _, p := range cfg.NodePodCIDRs {
		node.Spec.PodCIDRs = append(node.Spec.PodCIDRs, p.String())
	}
	src.SetNode(node)
	fk := kernel.NewFake()
	s := reconcile.NewSyncer(reconcile.Options{Config: cfg}, fk.Kernel(), src, source.NewTracker(nil))
	if err := s.Sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	return fk, s.Config()
}

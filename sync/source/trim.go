package source

import (
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// trim is the informers' transform: it keeps of each object only what a proxy decision
// reads, before the object enters the cache. The cache holds every Service and
// EndpointSlice of the cluster, and the bulk of a real one is not proxy state: managed
// fields, kubectl's last-applied-configuration (a second copy of the object), owner
// references, labels copied from the Service onto its slices, a targetRef per endpoint,
// and the decoded structs' own fields and pointers. A Service becomes the translation's
// own form (proxier.NewService), a slice its compact form
// (compactSlice); TestTrimKeepsTheTranslation checks that the translation of what they
// give is the translation of the object. Others (the Node) lose their managed fields.
// An object already trimmed is returned as it is.
func trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Service:
		return proxier.NewService(o), nil
	case *discovery.EndpointSlice:
		// The trigger-time annotation was noted before (InformerSource.transform).
		return packSlice(o), nil
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

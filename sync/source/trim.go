package source

import (
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trim is the informers' transform: it keeps of each object only what a proxy decision
// reads, before the object enters the cache. The cache holds every Service and
// EndpointSlice of the cluster, and the bulk of a real one is not proxy state: managed
// fields, kubectl's last-applied-configuration (a second copy of the object), owner
// references, labels copied from the Service onto its slices, a targetRef per endpoint,
// and the decoded structs' own fields and pointers. Services and slices become their
// compact forms (compactService, compactSlice); TestTrimKeepsTheTranslation checks that
// the translation of what they give back is the translation of the object. Others (the
// Node) lose their managed fields. An object already compact is returned as it is.
func trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Service:
		return packService(o), nil
	case *discovery.EndpointSlice:
		// The trigger-time annotation was noted before (InformerSource.transform).
		return packSlice(o), nil
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// keep returns the listed keys of in, or nil for none.
func keep(in map[string]string, keys []string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := in[k]; ok {
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = v
		}
	}
	return out
}

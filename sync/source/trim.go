package source

import (
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// trim is the informers' transform: it drops from each object what no proxy decision
// reads, before the object enters the cache. The cache holds every Service and
// EndpointSlice of the cluster, and the bulk of a real one is not proxy state: managed
// fields, kubectl's last-applied-configuration (a second copy of the object), owner
// references, labels copied from the Service onto its slices, and a targetRef per
// endpoint. What is kept is exactly what proxier.Translate, the Tracker and the
// metrics read; TestTrimKeepsTheTranslation checks it.
func trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Service:
		trimMeta(&o.ObjectMeta, []string{proxier.LabelServiceProxyName, proxier.LabelHeadless},
			[]string{proxier.AnnotationScheduler, proxier.AnnotationSchedulerFlags})
		o.Status.Conditions = nil
		o.Spec.Selector = nil // the controllers' business: a proxy reads the slices
	case *discovery.EndpointSlice:
		// The trigger-time annotation was noted before (InformerSource.transform).
		trimMeta(&o.ObjectMeta, []string{discovery.LabelServiceName, proxier.LabelHeadless}, nil)
		for i := range o.Endpoints {
			e := &o.Endpoints[i]
			// Zone: topology is read from the hints and the Node's own label, not here.
			e.TargetRef, e.Hostname, e.DeprecatedTopology, e.Zone = nil, nil, nil, nil
		}
		internSlice(o)
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// trimMeta keeps name, namespace, resourceVersion, deletion state and the listed labels
// and annotations.
func trimMeta(m *metav1.ObjectMeta, labels, annotations []string) {
	m.ManagedFields, m.OwnerReferences, m.Finalizers, m.GenerateName = nil, nil, nil, ""
	m.Labels = keep(m.Labels, labels)
	m.Annotations = keep(m.Annotations, annotations)
}

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

package source

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/proxier/compact"
)

// objMeta is the metadata a compact cached slice keeps: what client-go's informer reads
// from every object it stores (namespace and name for the key, resourceVersion to tell a
// resync from an update) and nothing else; compact.NoMeta is the rest of
// metav1.Object. A cached Service keeps the same three (proxier.Service).
type objMeta struct {
	compact.NoMeta
	namespace, name, rv string
}

var _ metav1.Object = (*objMeta)(nil)

// GetNamespace implements metav1.Object.
func (m *objMeta) GetNamespace() string { return m.namespace }

// GetName implements metav1.Object.
func (m *objMeta) GetName() string { return m.name }

// GetResourceVersion implements metav1.Object.
func (m *objMeta) GetResourceVersion() string { return m.rv }

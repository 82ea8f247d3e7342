package source

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// objMeta is the metadata a compact cached object keeps: what client-go's informer
// reads from every object it stores (namespace and name for the key, resourceVersion to
// tell a resync from an update) and nothing else. It satisfies metav1.Object; the
// setters are no-ops and the other getters return zero values, as for client-go's own
// tombstones (tools/cache/mutation_cache.go).
type objMeta struct {
	namespace, name, rv string
}

var _ metav1.Object = (*objMeta)(nil)

// GetNamespace implements metav1.Object.
func (m *objMeta) GetNamespace() string { return m.namespace }

// GetName implements metav1.Object.
func (m *objMeta) GetName() string { return m.name }

// GetResourceVersion implements metav1.Object.
func (m *objMeta) GetResourceVersion() string { return m.rv }

// The rest of metav1.Object: nothing the informer or the translation reads.

func (m *objMeta) SetNamespace(string)                           {}
func (m *objMeta) SetName(string)                                {}
func (m *objMeta) GetGenerateName() string                       { return "" }
func (m *objMeta) SetGenerateName(string)                        {}
func (m *objMeta) GetUID() types.UID                             { return "" }
func (m *objMeta) SetUID(types.UID)                              {}
func (m *objMeta) SetResourceVersion(string)                     {}
func (m *objMeta) GetGeneration() int64                          { return 0 }
func (m *objMeta) SetGeneration(int64)                           {}
func (m *objMeta) GetSelfLink() string                           { return "" }
func (m *objMeta) SetSelfLink(string)                            {}
func (m *objMeta) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (m *objMeta) SetCreationTimestamp(metav1.Time)              {}
func (m *objMeta) GetDeletionTimestamp() *metav1.Time            { return nil }
func (m *objMeta) SetDeletionTimestamp(*metav1.Time)             {}
func (m *objMeta) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (m *objMeta) SetDeletionGracePeriodSeconds(*int64)          {}
func (m *objMeta) GetLabels() map[string]string                  { return nil }
func (m *objMeta) SetLabels(map[string]string)                   {}
func (m *objMeta) GetAnnotations() map[string]string             { return nil }
func (m *objMeta) SetAnnotations(map[string]string)              {}
func (m *objMeta) GetFinalizers() []string                       { return nil }
func (m *objMeta) SetFinalizers([]string)                        {}
func (m *objMeta) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (m *objMeta) SetOwnerReferences([]metav1.OwnerReference)    {}
func (m *objMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (m *objMeta) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

package compact

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NoMeta is the part of metav1.Object a compact cached object does not keep: a cached
// object keeps what client-go's informer reads from every object it stores (namespace
// and name for the key, resourceVersion to tell a resync from an update) and nothing
// else, and embeds NoMeta for the rest. Its setters are no-ops and its getters return
// zero values, as for client-go's own tombstones (tools/cache/mutation_cache.go). It
// has no size: first in a struct, it adds nothing to it.
type NoMeta struct{}

// The rest of metav1.Object: nothing the informer or the translation reads.

func (NoMeta) SetNamespace(string)                           {}
func (NoMeta) SetName(string)                                {}
func (NoMeta) GetGenerateName() string                       { return "" }
func (NoMeta) SetGenerateName(string)                        {}
func (NoMeta) GetUID() types.UID                             { return "" }
func (NoMeta) SetUID(types.UID)                              {}
func (NoMeta) SetResourceVersion(string)                     {}
func (NoMeta) GetGeneration() int64                          { return 0 }
func (NoMeta) SetGeneration(int64)                           {}
func (NoMeta) GetSelfLink() string                           { return "" }
func (NoMeta) SetSelfLink(string)                            {}
func (NoMeta) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (NoMeta) SetCreationTimestamp(metav1.Time)              {}
func (NoMeta) GetDeletionTimestamp() *metav1.Time            { return nil }
func (NoMeta) SetDeletionTimestamp(*metav1.Time)             {}
func (NoMeta) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (NoMeta) SetDeletionGracePeriodSeconds(*int64)          {}
func (NoMeta) GetLabels() map[string]string                  { return nil }
func (NoMeta) SetLabels(map[string]string)                   {}
func (NoMeta) GetAnnotations() map[string]string             { return nil }
func (NoMeta) SetAnnotations(map[string]string)              {}
func (NoMeta) GetFinalizers() []string                       { return nil }
func (NoMeta) SetFinalizers([]string)                        {}
func (NoMeta) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (NoMeta) SetOwnerReferences([]metav1.OwnerReference)    {}
func (NoMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (NoMeta) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

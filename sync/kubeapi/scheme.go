package kubeapi

import (
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	networking "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Scheme holds only the API groups the proxy uses. client-go's generated clientset
// (k8s.io/client-go/kubernetes) registers every built-in group in its init, and any of
// its typed clients links them all in: at start that is ~8 MiB more resident memory
// (the groups' code and type data paged in, their registrations on the heap) and a
// binary half again as large, for groups a service proxy never reads.
var Scheme = runtime.NewScheme()

// Codecs are Scheme's serializers: JSON and protobuf, as the generated clients use.
var Codecs = serializer.NewCodecFactory(Scheme)

// parameters encodes ListOptions into a request's query.
var parameters = runtime.NewParameterCodec(Scheme)

func init() {
	// As k8s.io/client-go/kubernetes/scheme: the unversioned meta types (Status,
	// WatchEvent) first, then each group.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(v1.AddToScheme(Scheme))
	utilruntime.Must(discovery.AddToScheme(Scheme))
	utilruntime.Must(networking.AddToScheme(Scheme))
}

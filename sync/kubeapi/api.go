// Package kubeapi is the proxy's client of the Kubernetes API: lists and watches of the
// four resources it reads, Events, and the /version probe, over client-go's REST client
// with a scheme of only the groups it uses (core/v1, discovery.k8s.io/v1,
// networking.k8s.io/v1).
package kubeapi

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Resource is one kind the proxy lists and watches.
type Resource uint8

// The resources the daemon's ClusterRole lets it list and watch, as kube-proxy's.
const (
	Services       Resource = iota // core/v1 services
	EndpointSlices                 // discovery.k8s.io/v1 endpointslices
	Nodes                          // core/v1 nodes (cluster-scoped)
	ServiceCIDRs                   // networking.k8s.io/v1 servicecidrs (cluster-scoped)
)

// String returns the resource's plural name, as in a URL.
func (r Resource) String() string {
	switch r {
	case Services:
		return "services"
	case EndpointSlices:
		return "endpointslices"
	case Nodes:
		return "nodes"
	case ServiceCIDRs:
		return "servicecidrs"
	}
	return "unknown"
}

// API lists and watches the proxy's resources. namespace "" means all namespaces (and
// is the only value for the cluster-scoped ones). List returns the resource's list type
// (*v1.ServiceList, *discovery.EndpointSliceList, *v1.NodeList,
// *networking.ServiceCIDRList).
type API interface {
	List(ctx context.Context, r Resource, namespace string, o metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, r Resource, namespace string, o metav1.ListOptions) (watch.Interface, error)
}

// ListAs lists r through api and returns the list as L, the resource's list type.
func ListAs[L runtime.Object](ctx context.Context, api API, r Resource, namespace string, o metav1.ListOptions) (L, error) {
	var zero L
	obj, err := api.List(ctx, r, namespace, o)
	if err != nil {
		return zero, err
	}
	l, ok := obj.(L)
	if !ok {
		return zero, fmt.Errorf("list %s: got a %T", r, obj)
	}
	return l, nil
}

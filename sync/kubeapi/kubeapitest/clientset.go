// Package kubeapitest adapts a client-go clientset (the fake one of unit tests) to
// kubeapi.API. It is for tests and tools only: importing it links every built-in API
// group, which the daemon's own client avoids.
package kubeapitest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi"
)

// Clientset is a kubernetes.Interface seen as a kubeapi.API.
type Clientset struct{ kubernetes.Interface }

// List implements kubeapi.API.
func (c Clientset) List(ctx context.Context, r kubeapi.Resource, ns string, o metav1.ListOptions) (runtime.Object, error) {
	switch r {
	case kubeapi.Services:
		return c.CoreV1().Services(ns).List(ctx, o)
	case kubeapi.EndpointSlices:
		return c.DiscoveryV1().EndpointSlices(ns).List(ctx, o)
	case kubeapi.Nodes:
		return c.CoreV1().Nodes().List(ctx, o)
	case kubeapi.ServiceCIDRs:
		return c.NetworkingV1().ServiceCIDRs().List(ctx, o)
	}
	return nil, fmt.Errorf("list %s: not a resource of the proxy", r)
}

// Watch implements kubeapi.API.
func (c Clientset) Watch(ctx context.Context, r kubeapi.Resource, ns string, o metav1.ListOptions) (watch.Interface, error) {
	switch r {
	case kubeapi.Services:
		return c.CoreV1().Services(ns).Watch(ctx, o)
	case kubeapi.EndpointSlices:
		return c.DiscoveryV1().EndpointSlices(ns).Watch(ctx, o)
	case kubeapi.Nodes:
		return c.CoreV1().Nodes().Watch(ctx, o)
	case kubeapi.ServiceCIDRs:
		return c.NetworkingV1().ServiceCIDRs().Watch(ctx, o)
	}
	return nil, fmt.Errorf("watch %s: not a resource of the proxy", r)
}

// IsWatchListSemanticsUnSupported passes on the clientset's answer (the fake one cannot
// stream an initial list as a watch), which client-go's reflector asks.
func (c Clientset) IsWatchListSemanticsUnSupported() bool {
	u, ok := c.Interface.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

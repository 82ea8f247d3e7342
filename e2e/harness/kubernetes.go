package harness

import (
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// KubernetesEndpointSlice gives the kubernetes Service the apiserver's address as the
// nodes see it: the harness's loopback apiserver runs without its endpoint reconciler.
func KubernetesEndpointSlice() *discovery.EndpointSlice {
	return &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes-e2e", Namespace: "default",
		Labels: map[string]string{discovery.LabelServiceName: "kubernetes"}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](6443)}},
		Endpoints: []discovery.Endpoint{{Addresses: []string{APIServerGuestIP},
			Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}}}}
}

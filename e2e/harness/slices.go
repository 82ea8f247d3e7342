package harness

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Endpoint is a ready endpoint of a test Service: a pod's address and the node it runs on.
type Endpoint struct{ IP, Node string }

// ReadySlice builds the EndpointSlice name of the Service svc in the default namespace,
// as the EndpointSlice controller would write it: one port named "p", every endpoint
// ready, the address family that of the first endpoint (IPv4 when there is none).
func ReadySlice(svc, name string, port int32, proto v1.Protocol, eps ...Endpoint) *discovery.EndpointSlice {
	sl := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
		Labels: map[string]string{discovery.LabelServiceName: svc}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("p"), Port: ptr.To(port), Protocol: ptr.To(proto)}}}
	if len(eps) > 0 && strings.Contains(eps[0].IP, ":") {
		sl.AddressType = discovery.AddressTypeIPv6
	}
	for _, e := range eps {
		sl.Endpoints = append(sl.Endpoints, discovery.Endpoint{Addresses: []string{e.IP}, NodeName: ptr.To(e.Node),
			Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}})
	}
	return sl
}

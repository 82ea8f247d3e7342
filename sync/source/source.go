// Package source is the first half of the data flow: where the objects come from
// (informer caches in the daemon, a static set in `plan` and the tests), trimmed to what
// the translation reads; which Services changed since the last sync (the Tracker); and
// the node's own part of the translation config (NodeConfig), resolved in one place for
// the daemon and `plan`. Nothing here touches the kernel: package reconcile does.
package source

import (
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"net/netip"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Source is where the syncer reads objects from: informer caches in the daemon, a static
// set of objects in tests and `plan`. Implementations are safe for concurrent use.
type Source interface {
	// HasSynced reports whether every informer has done its initial list.
	HasSynced() bool
	// Service returns the Service in the form the translation reads, or nil if it does
	// not exist. It is shared: read-only.
	Service(key proxier.ServiceKey) *proxier.Service
	// Slices returns the EndpointSlices labelled with the Service's name.
	Slices(key proxier.ServiceKey) []*discovery.EndpointSlice
	// ServiceKeys returns every Service, and every Service name slices point at.
	ServiceKeys() []proxier.ServiceKey
	// Node returns this node's Node object, or nil.
	Node() *v1.Node
	// ServiceCIDRs returns the ranges of the cluster's ServiceCIDR objects, or nil
	// while none are known (their informer is not needed to sync: an API server or a
	// ClusterRole without them must not keep the node unprogrammed).
	ServiceCIDRs() []netip.Prefix
	// TakeTriggers returns the last-change-trigger-times of k's slices that arrived since
	// the last call (the informers' source: only those after its start; a static source
	// returns those of every slice it holds each time).
	TakeTriggers(k proxier.ServiceKey) []Trigger
}

// SliceServiceKey returns the Service an EndpointSlice belongs to, from its
// kubernetes.io/service-name label.
func SliceServiceKey(s *discovery.EndpointSlice) (proxier.ServiceKey, bool) {
	name, ok := s.Labels[discovery.LabelServiceName]
	if !ok || name == "" {
		return proxier.ServiceKey{}, false
	}
	return proxier.ServiceKey{Namespace: s.Namespace, Name: name}, true
}

package source

import (
	"maps"
	"net/netip"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	networking "k8s.io/api/networking/v1"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// StaticSource is an in-memory Source: objects go in through Set/Delete calls. Tests use
// it as a fake informer; `plan -f` reads files into one. It is safe for concurrent use.
type StaticSource struct {
	mu       sync.RWMutex
	services map[proxier.ServiceKey]*proxier.Service
	slices   map[proxier.ServiceKey]map[string]*discovery.EndpointSlice
	node     *v1.Node
	cidrs    []netip.Prefix
}

// NewStaticSource returns an empty source.
func NewStaticSource() *StaticSource {
	return &StaticSource{services: map[proxier.ServiceKey]*proxier.Service{}, slices: map[proxier.ServiceKey]map[string]*discovery.EndpointSlice{}}
}

// HasSynced implements Source; a static source is always synced.
func (s *StaticSource) HasSynced() bool { return true }

// SetService adds or replaces a Service and returns its key. It keeps the form the
// translation reads (proxier.NewService), as the informers do: a later change to svc is
// not seen, but for its SessionAffinityConfig and its ingress IP modes, which that form
// shares with svc.
func (s *StaticSource) SetService(svc *v1.Service) proxier.ServiceKey {
	c := proxier.NewService(svc)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := c.Key()
	s.services[k] = c
	return k
}

// DeleteService removes a Service.
func (s *StaticSource) DeleteService(k proxier.ServiceKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.services, k)
}

// DeleteSlice removes the EndpointSlice name of the Service k.
func (s *StaticSource) DeleteSlice(k proxier.ServiceKey, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.slices[k], name)
	if len(s.slices[k]) == 0 {
		delete(s.slices, k)
	}
}

// SetSlice adds or replaces an EndpointSlice; it reports the Service it belongs to, and
// false if it has no service-name label (it is then not stored).
func (s *StaticSource) SetSlice(sl *discovery.EndpointSlice) (proxier.ServiceKey, bool) {
	k, ok := SliceServiceKey(sl)
	if !ok {
		return k, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slices[k] == nil {
		s.slices[k] = map[string]*discovery.EndpointSlice{}
	}
	s.slices[k][sl.Name] = sl
	return k, true
}

// SetNode sets this node's Node object.
func (s *StaticSource) SetNode(n *v1.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.node = n
}

// Service implements Source.
func (s *StaticSource) Service(k proxier.ServiceKey) *proxier.Service {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.services[k]
}

// Slices implements Source, ordered by slice name.
func (s *StaticSource) Slices(k proxier.ServiceKey) []*discovery.EndpointSlice {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.slices[k]
	out := make([]*discovery.EndpointSlice, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[name])
	}
	return out
}

// ServiceKeys implements Source.
func (s *StaticSource) ServiceKeys() []proxier.ServiceKey {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := map[proxier.ServiceKey]struct{}{}
	for k := range s.services {
		keys[k] = struct{}{}
	}
	for k := range s.slices {
		keys[k] = struct{}{}
	}
	return slices.Collect(maps.Keys(keys))
}

// Node implements Source.
func (s *StaticSource) Node() *v1.Node {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.node
}

// SetServiceCIDRs sets what ServiceCIDRs returns.
func (s *StaticSource) SetServiceCIDRs(cidrs []netip.Prefix) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cidrs = cidrs
}

// ServiceCIDRs implements Source.
func (s *StaticSource) ServiceCIDRs() []netip.Prefix {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cidrs
}

// AddServiceCIDRs adds the ranges of a ServiceCIDR object to ServiceCIDRs.
func (s *StaticSource) AddServiceCIDRs(o *networking.ServiceCIDR) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range o.Spec.CIDRs {
		if p, err := netip.ParsePrefix(c); err == nil && !slices.Contains(s.cidrs, p.Masked()) {
			s.cidrs = append(s.cidrs, p.Masked())
		}
	}
}

// TakeTriggers implements Source: the trigger times of every slice of k, each call.
func (s *StaticSource) TakeTriggers(k proxier.ServiceKey) []Trigger {
	var out []Trigger
	for _, sl := range s.Slices(k) {
		if t, ok := sliceTrigger(sl); ok {
			out = append(out, t)
		}
	}
	return out
}

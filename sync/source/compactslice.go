package source

import (
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/proxier/compact"
)

// compactSlice is what the informer cache keeps of an EndpointSlice: its Service (the
// service-name label: headless slices are not watched), its address type, and per endpoint the first address (the only one a proxy programs, as
// kube-proxy), the conditions, the node name and the hints; per port the name, protocol
// and number. A quarter of a decoded slice's memory (BenchmarkRetainedObjects30k): no
// label map, one allocation for the strings (compact.Arena), the node and port names
// interned. slice turns one back into a discovery.EndpointSlice for the translation.
type compactSlice struct {
	objMeta
	// service is the kubernetes.io/service-name label's value; hasService tells an
	// empty value from none.
	service     string
	addressType discovery.AddressType
	endpoints   []endpoint
	ports       []endpointPort
	hasService  bool
}

// endpoint is what the translation reads of an Endpoint.
type endpoint struct {
	addr  string // Addresses[0]; cond's hasAddr tells "" from no address
	node  *string
	hints *discovery.EndpointHints
	cond  condBits
}

// condBits packs an endpoint's three optional conditions and whether it has an address.
type condBits uint8

const (
	hasAddr condBits = 1 << iota
	readySet
	ready
	servingSet
	serving
	terminatingSet
	terminating
)

// endpointPort is what the translation reads of an EndpointPort.
type endpointPort struct {
	name     *string
	protocol *v1.Protocol
	port     int32
	hasPort  bool
}

// packSlice makes the compact form of sl.
func packSlice(sl *discovery.EndpointSlice) *compactSlice {
	c := &compactSlice{addressType: discovery.AddressType(compact.Value(string(sl.AddressType)))}
	c.service, c.hasService = sl.Labels[discovery.LabelServiceName]
	var a compact.Arena
	c.objMeta.namespace = compact.Value(sl.Namespace)
	a.Add(&c.objMeta.name, sl.Name)
	a.Add(&c.objMeta.rv, sl.ResourceVersion)
	a.Add(&c.service, c.service)
	if len(sl.Endpoints) > 0 {
		c.endpoints = make([]endpoint, len(sl.Endpoints))
		for i := range sl.Endpoints {
			e, ce := &sl.Endpoints[i], &c.endpoints[i]
			if len(e.Addresses) > 0 {
				ce.cond |= hasAddr
				a.Add(&ce.addr, e.Addresses[0])
			}
			ce.cond |= packCond(e.Conditions.Ready, readySet, ready) | packCond(e.Conditions.Serving, servingSet, serving) |
				packCond(e.Conditions.Terminating, terminatingSet, terminating)
			ce.node, ce.hints = compact.StringPtr(e.NodeName), e.Hints
		}
	}
	if len(sl.Ports) > 0 {
		c.ports = make([]endpointPort, len(sl.Ports))
		for i, p := range sl.Ports {
			cp := &c.ports[i]
			cp.name, cp.protocol = compact.StringPtr(p.Name), compact.Protocol(p.Protocol)
			if p.Port != nil {
				cp.port, cp.hasPort = *p.Port, true
			}
		}
	}
	a.Seal()
	return c
}

// yes and no are the shared condition values.
var yes, no = true, false

func packCond(b *bool, set, value condBits) condBits {
	switch {
	case b == nil:
		return 0
	case *b:
		return set | value
	}
	return set
}

// condition is the inverse of packCond.
func (c condBits) condition(set, value condBits) *bool {
	if c&set == 0 {
		return nil
	}
	if c&value != 0 {
		return &yes
	}
	return &no
}

// key is the slice's Service, if it names one.
func (c *compactSlice) key() (proxier.ServiceKey, bool) {
	if !c.hasService || c.service == "" {
		return proxier.ServiceKey{}, false
	}
	return proxier.ServiceKey{Namespace: c.namespace, Name: c.service}, true
}

// slice returns the EndpointSlice the translation reads: a new object, with only the
// fields the compact form keeps, and no labels (the translation reads none; the
// Service it belongs to is key's). Its pointers (conditions, names) are shared and must
// not be written through.
func (c *compactSlice) slice() *discovery.EndpointSlice {
	sl := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: c.name, ResourceVersion: c.rv},
		AddressType: c.addressType}
	if len(c.endpoints) > 0 {
		sl.Endpoints = make([]discovery.Endpoint, len(c.endpoints))
		addrs := make([]string, len(c.endpoints))
		for i, ce := range c.endpoints {
			e := &sl.Endpoints[i]
			if ce.cond&hasAddr != 0 {
				addrs[i] = ce.addr
				e.Addresses = addrs[i : i+1 : i+1]
			}
			e.Conditions = discovery.EndpointConditions{Ready: ce.cond.condition(readySet, ready),
				Serving: ce.cond.condition(servingSet, serving), Terminating: ce.cond.condition(terminatingSet, terminating)}
			e.NodeName, e.Hints = ce.node, ce.hints
		}
	}
	if len(c.ports) > 0 {
		sl.Ports = make([]discovery.EndpointPort, len(c.ports))
		nums := make([]int32, len(c.ports))
		for i, p := range c.ports {
			sl.Ports[i] = discovery.EndpointPort{Name: p.name, Protocol: p.protocol}
			if p.hasPort {
				nums[i] = p.port
				sl.Ports[i].Port = &nums[i]
			}
		}
	}
	return sl
}

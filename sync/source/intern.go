package source

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// The decoder allocates every pointer field of every endpoint on its own: three
// condition bools, the node name (a string header and its bytes), and per port a
// name and a protocol. Cached objects are read-only (the informer contract), so trim
// points equal values at one shared copy instead: at 30,000 Services x 4 endpoints
// that is most of what an endpoint costs beyond its address
// (BenchmarkRetainedObjects30k).

var (
	yes, no = true, false
	// protocols are the shared protocol values; an unknown one keeps its own pointer.
	protocols = map[v1.Protocol]*v1.Protocol{}
)

func init() {
	for _, p := range []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP} {
		protocols[p] = &p
	}
}

// internLimit bounds the interned strings (node and port names): past it the table
// starts over, so names of nodes long gone do not pile up; pointers handed out stay valid.
const internLimit = 1 << 14

// names is the table of interned node and port names.
var names = struct {
	sync.Mutex
	m map[string]*string
}{m: map[string]*string{}}

// internString returns a shared pointer to *p's value (nil for nil).
func internString(p *string) *string {
	if p == nil {
		return nil
	}
	names.Lock()
	defer names.Unlock()
	if q, ok := names.m[*p]; ok {
		return q
	}
	if len(names.m) >= internLimit {
		names.m = map[string]*string{}
	}
	names.m[*p] = p
	return p
}

// internBool returns a shared pointer to *p's value (nil for nil).
func internBool(p *bool) *bool {
	switch {
	case p == nil:
		return nil
	case *p:
		return &yes
	}
	return &no
}

// internSlice points the slice's conditions, node names and port fields at shared
// values.
func internSlice(sl *discovery.EndpointSlice) {
	for i := range sl.Endpoints {
		e := &sl.Endpoints[i]
		c := &e.Conditions
		c.Ready, c.Serving, c.Terminating = internBool(c.Ready), internBool(c.Serving), internBool(c.Terminating)
		e.NodeName = internString(e.NodeName)
	}
	for i := range sl.Ports {
		p := &sl.Ports[i]
		p.Name = internString(p.Name)
		if p.Protocol != nil {
			if q, ok := protocols[*p.Protocol]; ok {
				p.Protocol = q
			}
		}
	}
}

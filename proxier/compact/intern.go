package compact

import (
	"sync"

	v1 "k8s.io/api/core/v1"
)

// The decoder allocates every string and pointer field of every object on its own:
// namespaces, node names, port names, protocols. Cached objects are read-only (the
// informer contract), so the compact forms point equal values at one shared copy instead
// (BenchmarkRetainedObjects30k).

// protocols are the shared protocol values; an unknown one keeps its own pointer.
var protocols = map[v1.Protocol]*v1.Protocol{}

func init() {
	for _, p := range []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP} {
		protocols[p] = &p
	}
}

// internLimit bounds the interned strings: past it the table starts over, so names of
// nodes long gone do not pile up; pointers handed out stay valid.
const internLimit = 1 << 14

// names is the table of interned values.
var names = struct {
	sync.Mutex
	m map[string]*string
}{m: map[string]*string{}}

// StringPtr returns a shared pointer to *p's value (nil for nil).
func StringPtr(p *string) *string {
	if p == nil {
		return nil
	}
	return intern(*p, p)
}

// Value returns a shared copy of s, for values many objects repeat (namespaces, types,
// policies, port names).
func Value(s string) string {
	if s == "" {
		return ""
	}
	return *intern(s, nil)
}

// intern returns the table's pointer for s, adding p (or a new pointer) when it has none.
func intern(s string, p *string) *string {
	names.Lock()
	defer names.Unlock()
	if q, ok := names.m[s]; ok {
		return q
	}
	if len(names.m) >= internLimit {
		names.m = map[string]*string{}
	}
	if p == nil {
		p = new(string)
		*p = s
	}
	names.m[s] = p
	return p
}

// Protocol returns the shared pointer to *p's value (p itself for one unknown).
func Protocol(p *v1.Protocol) *v1.Protocol {
	if p == nil {
		return nil
	}
	if q, ok := protocols[*p]; ok {
		return q
	}
	return p
}

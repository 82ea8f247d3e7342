package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// The churn's kinds of change. Endpoint changes come first and weigh most: in a cluster
// most changes are pods coming, going and changing readiness.
const (
	opEndpointAdd         = "endpoint-add"
	opEndpointRemove      = "endpoint-remove"
	opEndpointTerminating = "endpoint-terminating"
	opEndpointUnready     = "endpoint-unready"
	opEndpointReady       = "endpoint-ready"
	opServiceDelete       = "service-delete"
	opServiceCreate       = "service-create"
	opType                = "type"
	opPort                = "port"
	opAffinity            = "affinity"
	opETP                 = "external-traffic-policy"
	opITP                 = "internal-traffic-policy"
	opTrafficDistribution = "traffic-distribution"
	opScheduler           = "scheduler"
	opNodeLabel           = "node-label"
	opNodeAddress         = "node-address"
)

// opWeights is how often each kind is drawn, in parts of the whole (service-create is
// drawn whenever a deleted Service is picked).
var opWeights = []struct {
	kind   string
	weight int
}{
	{opEndpointAdd, 18}, {opEndpointRemove, 14}, {opEndpointTerminating, 10}, {opEndpointUnready, 10}, {opEndpointReady, 13},
	{opServiceDelete, 4}, {opType, 6}, {opPort, 4}, {opAffinity, 4}, {opETP, 4}, {opITP, 3}, {opTrafficDistribution, 3},
	{opScheduler, 4}, {opNodeLabel, 2}, {opNodeAddress, 1},
}

// maxEndpoints bounds a churned Service's endpoints (benchkit.EpIP keeps them distinct).
const maxEndpoints = 8

// schedulers are the values the churn gives the scheduler annotation ("" removes it):
// every one is a scheduler the kernel ships (ip_vs_*.ko), so none is a Warning.
var schedulers = []string{"", "rr", "wrr", "lc", "sh", "mh"}

// annotationScheduler is the daemon's per-Service scheduler annotation
// (proxier.AnnotationScheduler in the daemon's module).
const annotationScheduler = "ipvs-proxier.io/scheduler"

// epModel is one endpoint of a churned Service: its slot (its address is
// benchkit.EpIP(service, slot)) and its conditions.
type epModel struct {
	Slot                        int
	Ready, Serving, Terminating bool
}

// svcModel is what the churn holds of one Service of the workload: every field it changes.
type svcModel struct {
	Exists     bool
	Type       v1.ServiceType
	Port       int32
	Affinity   bool
	ETPLocal   bool
	ITPLocal   bool
	PreferZone bool // trafficDistribution PreferSameZone (PreferClose, its old name, is deprecated)
	Scheduler  string
	Endpoints  []epModel
}

// nodeModel is what the churn changes of the Node: a label, its zone and an extra address.
type nodeModel struct {
	ZoneB, Flip, ExtraAddress bool
}

// op is one change the churn draws: its kind, the Service (its index; -1 for the Node)
// and the state after it.
type op struct {
	Kind  string
	Index int
	After svcModel
	Node  nodeModel
}

// churner draws changes over the workload's Services from a seeded source and keeps the
// state they lead to. Services held by a fault (a kernel edit being checked) are left
// alone until released. Safe for concurrent use.
type churner struct {
	mu   sync.Mutex
	rng  *rand.Rand
	svcs []svcModel
	node nodeModel
	held map[int]bool
	// writing is the Service whose drawn change is being written (-1: none): a fault
	// cannot hold it until the write is done.
	writing int
}

// newChurner starts from the Services as loaded.
func newChurner(seed uint64, svcs []svcModel) *churner {
	return &churner{rng: rand.New(rand.NewPCG(seed, seed^0x5ca1ab1e)), svcs: svcs, held: map[int]bool{}, writing: -1}
}

// next draws one change and records its result; ok is false when no Service could take
// the drawn kind in a few tries (everything held, say). The caller writes it, then
// calls written.
func (c *churner) next() (o op, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, w := range opWeights {
		total += w.weight
	}
	for range 20 {
		n := c.rng.IntN(total)
		kind := ""
		for _, w := range opWeights {
			if n < w.weight {
				kind = w.kind
				break
			}
			n -= w.weight
		}
		if kind == opNodeLabel || kind == opNodeAddress {
			nd := c.node
			if kind == opNodeAddress {
				nd.ExtraAddress = !nd.ExtraAddress
			} else if c.rng.IntN(2) == 0 {
				nd.ZoneB = !nd.ZoneB
			} else {
				nd.Flip = !nd.Flip
			}
			c.node = nd
			return op{Kind: kind, Index: -1, Node: nd}, true
		}
		i := c.rng.IntN(len(c.svcs))
		if c.held[i] || c.writing == i {
			continue
		}
		after, applies := change(c.rng, kind, c.svcs[i])
		if !applies {
			continue
		}
		if !c.svcs[i].Exists {
			kind = opServiceCreate
		}
		c.svcs[i] = after
		c.writing = i
		return op{Kind: kind, Index: i, After: after}, true
	}
	return op{}, false
}

// change is s after a change of kind; applies is false when kind does not apply to s
// (an endpoint removed from a Service without endpoints, ETP on a ClusterIP). A deleted
// Service comes back whatever the kind: its creation.
func change(r *rand.Rand, kind string, s svcModel) (svcModel, bool) {
	s.Endpoints = slices.Clone(s.Endpoints)
	if !s.Exists {
		s.Exists = true
		return s, true
	}
	pick := func() int { return r.IntN(len(s.Endpoints)) }
	switch kind {
	case opEndpointAdd:
		if len(s.Endpoints) >= maxEndpoints {
			return s, false
		}
		slot := 0
		for slices.ContainsFunc(s.Endpoints, func(e epModel) bool { return e.Slot == slot }) {
			slot++
		}
		s.Endpoints = append(s.Endpoints, epModel{Slot: slot, Ready: true, Serving: true})
	case opEndpointRemove:
		if len(s.Endpoints) == 0 {
			return s, false
		}
		i := pick()
		s.Endpoints = slices.Delete(s.Endpoints, i, i+1)
	case opEndpointTerminating, opEndpointUnready:
		if len(s.Endpoints) == 0 {
			return s, false
		}
		i := pick()
		// Terminating: still serving, as a pod in its grace period (KEP-1672).
		s.Endpoints[i] = epModel{Slot: s.Endpoints[i].Slot, Serving: kind == opEndpointTerminating, Terminating: kind == opEndpointTerminating}
	case opEndpointReady:
		changed := false
		for i, e := range s.Endpoints {
			if !e.Ready {
				s.Endpoints[i] = epModel{Slot: e.Slot, Ready: true, Serving: true}
				changed = true
			}
		}
		return s, changed
	case opServiceDelete:
		s = svcModel{Type: v1.ServiceTypeClusterIP, Port: 80, Endpoints: s.Endpoints}
	case opType:
		s.Type = map[v1.ServiceType]v1.ServiceType{v1.ServiceTypeClusterIP: v1.ServiceTypeNodePort,
			v1.ServiceTypeNodePort: v1.ServiceTypeLoadBalancer, v1.ServiceTypeLoadBalancer: v1.ServiceTypeClusterIP}[s.Type]
		if s.Type == v1.ServiceTypeClusterIP {
			s.ETPLocal = false // the API refuses externalTrafficPolicy on a ClusterIP Service
		}
	case opPort:
		s.Port = map[int32]int32{80: 81, 81: 80}[s.Port]
	case opAffinity:
		s.Affinity = !s.Affinity
	case opETP:
		if s.Type == v1.ServiceTypeClusterIP {
			return s, false
		}
		s.ETPLocal = !s.ETPLocal
	case opITP:
		s.ITPLocal = !s.ITPLocal
	case opTrafficDistribution:
		s.PreferZone = !s.PreferZone
	case opScheduler:
		s.Scheduler = schedulers[(slices.Index(schedulers, s.Scheduler)+1+r.IntN(len(schedulers)-1))%len(schedulers)]
	default:
		return s, false
	}
	return s, true
}

// written says the last change drawn is written (or failed).
func (c *churner) written() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writing = -1
}

// hold keeps the churn off Service i until release; false if it is already held or
// its change is being written.
func (c *churner) hold(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[i] || c.writing == i {
		return false
	}
	c.held[i] = true
	return true
}

// release lets the churn change Service i again.
func (c *churner) release(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, i)
}

// set replaces what the churn holds of Service i (after reading it back from the API).
func (c *churner) set(i int, s svcModel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.svcs[i] = s
}

// get is the churn's state of Service i.
func (c *churner) get(i int) svcModel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.svcs[i]
}

// modelOf reads a Service and its slice (nil: none) as the churn models them.
func modelOf(svc *v1.Service, sl *discovery.EndpointSlice) svcModel {
	if svc == nil {
		return svcModel{Type: v1.ServiceTypeClusterIP, Port: 80}
	}
	sp := svc.Spec
	m := svcModel{Exists: true, Type: sp.Type, Affinity: sp.SessionAffinity == v1.ServiceAffinityClientIP,
		ETPLocal:   sp.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal,
		ITPLocal:   sp.InternalTrafficPolicy != nil && *sp.InternalTrafficPolicy == v1.ServiceInternalTrafficPolicyLocal,
		PreferZone: sp.TrafficDistribution != nil, Scheduler: svc.Annotations[annotationScheduler]}
	if m.Type == "" {
		m.Type = v1.ServiceTypeClusterIP
	}
	if len(sp.Ports) > 0 {
		m.Port = sp.Ports[0].Port
	}
	if sl != nil {
		for _, e := range sl.Endpoints {
			slot := 0
			if len(e.Addresses) > 0 {
				_, _ = fmt.Sscanf(e.Addresses[0], "10.%d.", &slot)
				slot -= 128 // benchkit.EpIP: the second octet is 128 + slot
			}
			c := e.Conditions
			m.Endpoints = append(m.Endpoints, epModel{Slot: slot, Ready: c.Ready == nil || *c.Ready,
				Serving: c.Serving == nil || *c.Serving, Terminating: c.Terminating != nil && *c.Terminating})
		}
	}
	return m
}

// applySpec makes svc (as read from the API: its ClusterIP and NodePorts kept) say what
// m says. What the API forbids for the new type goes: NodePorts on a ClusterIP Service,
// externalTrafficPolicy off NodePort and LoadBalancer, healthCheckNodePort but on a
// LoadBalancer with ETP=Local, allocateLoadBalancerNodePorts off LoadBalancer
// (pkg/apis/core/validation, ValidateService).
func applySpec(svc *v1.Service, m svcModel) {
	sp := &svc.Spec
	sp.Type = m.Type
	if m.Type == v1.ServiceTypeClusterIP {
		for i := range sp.Ports {
			sp.Ports[i].NodePort = 0
		}
		sp.ExternalTrafficPolicy = ""
	} else if m.ETPLocal {
		sp.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	} else {
		sp.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	}
	if m.Type != v1.ServiceTypeLoadBalancer {
		sp.AllocateLoadBalancerNodePorts = nil
	}
	if m.Type != v1.ServiceTypeLoadBalancer || !m.ETPLocal {
		sp.HealthCheckNodePort = 0
	}
	sp.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyCluster)
	if m.ITPLocal {
		sp.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyLocal)
	}
	sp.SessionAffinity, sp.SessionAffinityConfig = v1.ServiceAffinityNone, nil
	if m.Affinity {
		sp.SessionAffinity = v1.ServiceAffinityClientIP
	}
	sp.TrafficDistribution = nil
	if m.PreferZone {
		sp.TrafficDistribution = ptr.To(v1.ServiceTrafficDistributionPreferSameZone)
	}
	if len(sp.Ports) > 0 {
		sp.Ports[0].Port = m.Port
	}
	// Merged, not replaced: the Service's other annotations stay.
	if m.Scheduler == "" {
		delete(svc.Annotations, annotationScheduler)
	} else {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[annotationScheduler] = m.Scheduler
	}
}

// newService is Service i of the workload, created anew as m says.
func newService(i int, m svcModel) *v1.Service {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: benchkit.SvcName(i), Namespace: benchkit.Namespace},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "p", Port: m.Port, Protocol: v1.ProtocolTCP}}}}
	applySpec(svc, m)
	return svc
}

// sliceOf is Service i's EndpointSlice as m says, as the EndpointSlice controller
// writes it: named NAME-1, port "p" 8080, its trigger time annotated (kube-proxy's
// network programming latency starts there).
func sliceOf(i int, m svcModel, trigger metav1.Time) *discovery.EndpointSlice {
	name := benchkit.SvcName(i)
	sl := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: benchkit.Namespace,
		Labels:      map[string]string{discovery.LabelServiceName: name},
		Annotations: map[string]string{v1.EndpointsLastChangeTriggerTime: trigger.UTC().Format("2006-01-02T15:04:05.000000000Z07:00")}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("p"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)}}}
	for _, e := range m.Endpoints {
		sl.Endpoints = append(sl.Endpoints, discovery.Endpoint{Addresses: []string{benchkit.EpIP(i, e.Slot)}, NodeName: ptr.To(nodeName),
			Conditions: discovery.EndpointConditions{Ready: ptr.To(e.Ready), Serving: ptr.To(e.Serving), Terminating: ptr.To(e.Terminating)}})
	}
	return sl
}

// lbIP is the LoadBalancer ingress address the soak sets by hand on Service i (as a
// cloud controller would): distinct for i < 65,536, in 198.18.0.0/15, the range RFC 2544
// sets aside for benchmarks, which nothing here routes.
func lbIP(i int) string { return fmt.Sprintf("198.18.%d.%d", (i>>8)&255, i&255) }

package source

import (
	"context"
	"io"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

const sliceServiceIndex = "service"

// InformerSource is the daemon's Source: client-go informers for Services,
// EndpointSlices (not headless ones) and this node's Node. Their handlers only tell the
// Tracker which Services changed.
type InformerSource struct {
	services cache.SharedIndexInformer
	slices   cache.SharedIndexInformer
	nodes    cache.SharedIndexInformer
	// cidrs watches ServiceCIDRs (servicecidrs.go); not waited for by HasSynced.
	cidrs    cache.SharedIndexInformer
	nodeName string
	// triggers carries the slices' trigger times past trim (triggers.go).
	triggers *triggerBox
	// onError is OnWatchError's function, set before Start.
	onError func(error)
}

// NewInformerSource wires informers to tracker. badSlice is called for slices without a
// service-name label (they cannot be attributed to a Service).
func NewInformerSource(client kubernetes.Interface, nodeName string, resync time.Duration, tracker *Tracker, badSlice func(*discovery.EndpointSlice)) *InformerSource {
	s := &InformerSource{nodeName: nodeName, triggers: newTriggerBox(time.Now())}
	notHeadless := labels.NewSelector().Add(mustRequirement(proxier.LabelHeadless)).String()
	thisNode := fields.OneTermEqualSelector("metadata.name", nodeName).String()
	s.services = s.informer(&v1.Service{}, resync,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Services("").List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Services("").Watch(ctx, o)
		})
	s.slices = s.informer(&discovery.EndpointSlice{}, resync,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = notHeadless
			return client.DiscoveryV1().EndpointSlices("").List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = notHeadless
			return client.DiscoveryV1().EndpointSlices("").Watch(ctx, o)
		})
	s.nodes = s.informer(&v1.Node{}, resync,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = thisNode
			return client.CoreV1().Nodes().List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = thisNode
			return client.CoreV1().Nodes().Watch(ctx, o)
		})
	_ = s.slices.AddIndexers(informerIndexers(true))
	handler := changeHandler(tracker, s.triggers, badSlice)
	_, _ = s.services.AddEventHandler(handler)
	_, _ = s.slices.AddEventHandler(handler)
	_, _ = s.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { tracker.AllChanged() },
		UpdateFunc: func(old, cur any) {
			if nodeChanged(old.(*v1.Node), cur.(*v1.Node)) {
				tracker.AllChanged()
			}
		},
		DeleteFunc: func(any) { tracker.AllChanged() },
	})
	s.watchServiceCIDRs(client, resync, tracker)
	return s
}

// informerIndexers are the indexes an informer keeps: for EndpointSlices (slices) the
// one by Service, none for the others. (A namespace index, usual in informers, cost a
// set of every object's key per namespace and had no reader.)
func informerIndexers(slices bool) cache.Indexers {
	if slices {
		return cache.Indexers{sliceServiceIndex: sliceServiceIndexFunc}
	}
	return cache.Indexers{}
}

// sliceServiceIndexFunc indexes EndpointSlices by the key of their Service.
func sliceServiceIndexFunc(obj any) ([]string, error) {
	if sl, ok := obj.(*discovery.EndpointSlice); ok {
		if k, ok := SliceServiceKey(sl); ok {
			return []string{k.String()}, nil
		}
	}
	return nil, nil
}

// changeHandler tells tracker which Service a Service or EndpointSlice event changes.
// badSlice is called for a slice without a service-name label.
// A slice's trigger time goes to triggers (when not nil) before the Tracker hears of it.
func changeHandler(tracker *Tracker, triggers *triggerBox, badSlice func(*discovery.EndpointSlice)) cache.ResourceEventHandlerFuncs {
	serviceKey := func(obj any) (proxier.ServiceKey, bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		switch o := obj.(type) {
		case *v1.Service:
			return proxier.ServiceKey{Namespace: o.Namespace, Name: o.Name}, true
		case *discovery.EndpointSlice:
			k, ok := SliceServiceKey(o)
			if !ok && badSlice != nil {
				badSlice(o)
			}
			return k, ok
		}
		return proxier.ServiceKey{}, false
	}
	changed := func(obj any) {
		k, ok := serviceKey(obj)
		if !ok {
			return
		}
		if _, svc := obj.(*v1.Service); svc {
			tracker.ServiceChanged(k)
		} else {
			tracker.EndpointsChanged(k)
		}
	}
	note := func(obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if sl, ok := obj.(*discovery.EndpointSlice); ok && triggers != nil {
			if deleted {
				triggers.forget(sl)
			} else {
				triggers.stored(sl)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { note(obj, false); changed(obj) },
		UpdateFunc: func(old, cur any) { note(cur, false); changed(old); changed(cur) },
		DeleteFunc: func(obj any) { note(obj, true); changed(obj) },
	}
}

// nodeChanged reports whether a Node update changes what the node config reads from it:
// the zone (topology hints), the addresses (primary IPs, NodePorts) and the pod CIDRs
// (detectLocalMode NodeCIDR). Status heartbeats change none of them.
func nodeChanged(o, c *v1.Node) bool {
	return o.Labels[v1.LabelTopologyZone] != c.Labels[v1.LabelTopologyZone] || !slices.Equal(o.Status.Addresses, c.Status.Addresses) ||
		!slices.Equal(o.Spec.PodCIDRs, c.Spec.PodCIDRs) || o.Spec.PodCIDR != c.Spec.PodCIDR
}

// informer is a shared informer over list and watch that keeps trimmed objects and
// reports watch streams that end in an error to onError (see OnWatchError).
func (s *InformerSource) informer(obj runtime.Object, resync time.Duration, list cache.ListWithContextFunc, watchFn cache.WatchFuncWithContext) cache.SharedIndexInformer {
	lw := &cache.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		w, err := watchFn(ctx, o)
		if err != nil {
			return nil, err
		}
		return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
			if ev.Type == watch.Error {
				s.streamError(apierrors.FromObject(ev.Object))
			}
			return ev, true
		}), nil
	}}
	inf := cache.NewSharedIndexInformer(lw, obj, resync, informerIndexers(false))
	_ = inf.SetTransform(s.transform)
	return inf
}

// streamError passes a failed list, watch or watch stream on, unless it is routine: a
// watch closed by the server or an expired resource version, which client-go's default
// handler also treats as normal (exact comparisons, as it makes: a failed list wraps
// io.EOF too).
func (s *InformerSource) streamError(err error) {
	if s.onError == nil || err == io.EOF || err == io.ErrUnexpectedEOF || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return
	}
	s.onError(err)
}

func mustRequirement(label string) labels.Requirement {
	r, err := labels.NewRequirement(label, "!", nil)
	if err != nil {
		panic(err) // a constant label key; cannot fail
	}
	return *r
}

// transform is the informers' transform: a slice's trigger time is noted, then the
// object trimmed.
func (s *InformerSource) transform(obj any) (any, error) {
	if sl, ok := obj.(*discovery.EndpointSlice); ok {
		s.triggers.received(sl)
	}
	return trim(obj)
}

// TakeTriggers implements Source.
func (s *InformerSource) TakeTriggers(k proxier.ServiceKey) []Trigger { return s.triggers.take(k) }

// Start starts the informers; they stop when stop closes.
func (s *InformerSource) Start(stop <-chan struct{}) {
	for _, inf := range []cache.SharedIndexInformer{s.services, s.slices, s.nodes, s.cidrs} {
		go inf.Run(stop)
	}
}

// HasSynced implements Source.
func (s *InformerSource) HasSynced() bool {
	return s.services.HasSynced() && s.slices.HasSynced() && s.nodes.HasSynced()
}

// Service implements Source.
func (s *InformerSource) Service(k proxier.ServiceKey) *v1.Service {
	obj, ok, err := s.services.GetStore().GetByKey(k.String())
	if err != nil || !ok {
		return nil
	}
	return obj.(*v1.Service)
}

// Slices implements Source.
func (s *InformerSource) Slices(k proxier.ServiceKey) []*discovery.EndpointSlice {
	objs, err := s.slices.GetIndexer().ByIndex(sliceServiceIndex, k.String())
	if err != nil {
		return nil
	}
	out := make([]*discovery.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*discovery.EndpointSlice))
	}
	slices.SortFunc(out, func(a, b *discovery.EndpointSlice) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// ServiceKeys implements Source.
func (s *InformerSource) ServiceKeys() []proxier.ServiceKey {
	keys := sets.New[proxier.ServiceKey]()
	for _, o := range s.services.GetStore().List() {
		svc := o.(*v1.Service)
		keys.Insert(proxier.ServiceKey{Namespace: svc.Namespace, Name: svc.Name})
	}
	for _, k := range s.slices.GetIndexer().ListIndexFuncValues(sliceServiceIndex) {
		ns, name, err := cache.SplitMetaNamespaceKey(k)
		if err == nil {
			keys.Insert(proxier.ServiceKey{Namespace: ns, Name: name})
		}
	}
	return keys.UnsortedList()
}

// Node implements Source.
func (s *InformerSource) Node() *v1.Node {
	obj, ok, err := s.nodes.GetStore().GetByKey(s.nodeName)
	if err != nil || !ok {
		return nil
	}
	return obj.(*v1.Node)
}

// OnWatchError calls fn when a list or watch of any informer fails, or an open watch
// stream ends in an error, for a reason other than the routine ones (see streamError).
// Call it before Start. The informers keep retrying with client-go's backoff whatever fn
// does. The stream errors matter on a silent partition: client-go's reflector logs a
// watch that ended with "http2: client connection lost" and starts over without calling
// its watch error handler, so only the stream says the server is gone.
func (s *InformerSource) OnWatchError(fn func(error)) {
	s.onError = fn
	for _, inf := range []cache.SharedIndexInformer{s.services, s.slices, s.nodes} {
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			cache.DefaultWatchErrorHandler(ctx, r, err)
			s.streamError(err)
		})
	}
}

package source

import (
	"context"
	"io"
	"slices"
	gosync "sync"
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
	"k8s.io/client-go/tools/cache"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi"
)

// InformerSource is the daemon's Source: client-go informers for Services,
// EndpointSlices (not headless ones) and this node's Node. Their handlers only tell the
// Tracker which Services changed.
type InformerSource struct {
	services cache.SharedIndexInformer
	slices   cache.SharedIndexInformer
	// bySvc is the slices by Service (sliceindex.go), and slicesSeen the slice handler's
	// registration: the index is complete once it has seen the initial list.
	bySvc      *sliceIndex
	slicesSeen cache.ResourceEventHandlerRegistration
	nodes      cache.SharedIndexInformer
	// cidrs watches ServiceCIDRs (servicecidrs.go); not waited for by HasSynced.
	cidrs cache.SharedIndexInformer
	// cidrsAbsent is OnServiceCIDRsAbsent's function, called once.
	cidrsAbsent     func(error)
	cidrsAbsentOnce gosync.Once
	nodeName        string
	// client is the informers' client (informer reads whether it can watch-list).
	client kubeapi.API
	// triggers carries the slices' trigger times past trim (triggers.go).
	triggers *triggerBox
	// onError is OnWatchError's function, set before Start.
	onError func(error)
}

// NewInformerSource wires informers to tracker. badSlice is called for slices without a
// service-name label (they cannot be attributed to a Service).
func NewInformerSource(client kubeapi.API, nodeName string, resync time.Duration, tracker *Tracker, badSlice func(*discovery.EndpointSlice)) *InformerSource {
	s := &InformerSource{nodeName: nodeName, client: client, triggers: newTriggerBox(time.Now()), bySvc: newSliceIndex()}
	notHeadless := labels.NewSelector().Add(mustRequirement(proxier.LabelHeadless)).String()
	thisNode := fields.OneTermEqualSelector("metadata.name", nodeName).String()
	s.services = s.informer(&v1.Service{}, resync,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.List(ctx, kubeapi.Services, "", o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, kubeapi.Services, "", o)
		})
	s.slices = s.informer(&discovery.EndpointSlice{}, resync,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = notHeadless
			return client.List(ctx, kubeapi.EndpointSlices, "", o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = notHeadless
			return client.Watch(ctx, kubeapi.EndpointSlices, "", o)
		})
	s.nodes = s.informer(&v1.Node{}, resync,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = thisNode
			return client.List(ctx, kubeapi.Nodes, "", o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = thisNode
			return client.Watch(ctx, kubeapi.Nodes, "", o)
		})
	handler := changeHandler(tracker, s.triggers, s.bySvc, badSlice)
	_, _ = s.services.AddEventHandler(handler)
	s.slicesSeen, _ = s.slices.AddEventHandler(handler)
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

// changeHandler tells tracker which Service a Service or EndpointSlice event changes.
// badSlice is called for a slice without a service-name label. Before the Tracker hears
// of a slice's change, the slice is in bySvc and its trigger time in triggers (each
// when not nil).
func changeHandler(tracker *Tracker, triggers *triggerBox, bySvc *sliceIndex, badSlice func(*discovery.EndpointSlice)) cache.ResourceEventHandlerFuncs {
	serviceKey := func(obj any) (proxier.ServiceKey, bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		switch o := obj.(type) {
		case *proxier.Service:
			return o.Key(), true
		case *compactSlice:
			k, ok := o.key()
			if !ok && badSlice != nil {
				badSlice(o.slice())
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
		if _, svc := obj.(*proxier.Service); svc {
			tracker.ServiceChanged(k)
		} else {
			tracker.EndpointsChanged(k)
		}
	}
	// note brings the slice index and the trigger times up to date: old is nil for an
	// add, cur for a delete.
	note := func(old, cur any) {
		if d, ok := old.(cache.DeletedFinalStateUnknown); ok {
			old = d.Obj
		}
		o, _ := old.(*compactSlice)
		c, isSlice := cur.(*compactSlice)
		if !isSlice && o == nil {
			return
		}
		if bySvc != nil {
			bySvc.update(o, c)
		}
		switch {
		case triggers == nil:
		case c != nil:
			triggers.stored(c)
		default:
			triggers.forget(o)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { note(nil, obj); changed(obj) },
		UpdateFunc: func(old, cur any) {
			if unchanged(old, cur) {
				return
			}
			note(old, cur)
			changed(old)
			changed(cur)
		},
		DeleteFunc: func(obj any) { note(obj, nil); changed(obj) },
	}
}

// unchanged reports whether an update delivers the object it replaces again, with the same
// resourceVersion: the informers' resync every configSyncPeriod and their relist after a
// watch ended deliver every object so. kube-proxy's change trackers find such an update
// empty; taken as a change, the resync retranslated every Service (17 s at 100,000 in the
// VM, `make bench-scale`'s daemon log).
func unchanged(old, cur any) bool {
	type versioned interface{ GetResourceVersion() string }
	o, ok1 := old.(versioned)
	c, ok2 := cur.(versioned)
	return ok1 && ok2 && o.GetResourceVersion() != "" && o.GetResourceVersion() == c.GetResourceVersion()
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
	// No index: a namespace index, usual in informers, costs a set of every object's
	// key per namespace and has no reader; slices by Service are bySvc.
	// As client-go's generated informers do: a client that cannot stream the initial
	// list as a watch (the fake clientset of unit tests) is listed, not watch-listed.
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, s.client), obj, resync, cache.Indexers{})
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
	return s.services.HasSynced() && s.slicesSeen.HasSynced() && s.nodes.HasSynced()
}

// Service implements Source.
func (s *InformerSource) Service(k proxier.ServiceKey) *proxier.Service {
	obj, ok, err := s.services.GetStore().GetByKey(k.String())
	if err != nil || !ok {
		return nil
	}
	return obj.(*proxier.Service)
}

// Slices implements Source.
func (s *InformerSource) Slices(k proxier.ServiceKey) []*discovery.EndpointSlice {
	objs := s.bySvc.get(k)
	out := make([]*discovery.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.slice())
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
		keys.Insert(o.(*proxier.Service).Key())
	}
	keys.Insert(s.bySvc.keys()...)
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

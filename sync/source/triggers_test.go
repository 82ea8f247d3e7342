package source

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestInformerTriggersTakenOnce: in the order an informer calls them (its transform,
// then the cache, then the event handler), a slice changed after the source started
// leaves no trigger-time annotation in the cached object, and its trigger time is ready
// for the syncer by the time the Tracker hears of the change, once; a slice older than
// the source gives none (its age is not a latency), and a deleted one leaves nothing.
func TestInformerTriggersTakenOnce(t *testing.T) {
	start := time.Now()
	src := &InformerSource{triggers: newTriggerBox(start)}
	var taken []Trigger
	var tracker *Tracker
	tracker = NewTracker(func() { // the syncer, woken by the change
		keys, _ := tracker.Drain()
		for k := range keys {
			taken = append(taken, src.TakeTriggers(k)...)
		}
	})
	h := changeHandler(tracker, src.triggers, nil, nil)
	deliver := func(sl *discovery.EndpointSlice, old *compactSlice) *compactSlice {
		o, err := src.transform(sl)
		if err != nil {
			t.Fatal(err)
		}
		cached := o.(*compactSlice)
		if a := cached.slice().Annotations; len(a) != 0 {
			t.Errorf("the cached slice keeps annotations %v", a)
		}
		if old == nil {
			h.OnAdd(cached, false)
		} else {
			h.OnUpdate(old, cached)
		}
		return cached
	}
	deliver(triggerSlice("old", "svc-old", start.Add(-time.Hour)), nil)
	if len(taken) != 0 {
		t.Errorf("a slice older than the source gave trigger times %v", taken)
	}
	at := start.Add(time.Second).UTC().Truncate(time.Millisecond)
	cur := deliver(triggerSlice("new", "svc-new", at), nil)
	if len(taken) != 1 || !taken[0].At.Equal(at) || taken[0].IPv6 {
		t.Fatalf("trigger times %v, want one at %v", taken, at)
	}
	if again := src.TakeTriggers(proxier.ServiceKey{Namespace: "ns", Name: "svc-new"}); len(again) != 0 {
		t.Errorf("taken twice: %v", again)
	}
	taken = nil
	later := at.Add(time.Second)
	deliver(triggerSlice("new", "svc-new", later), cur)
	if len(taken) != 1 || !taken[0].At.Equal(later) {
		t.Errorf("after an update: trigger times %v, want one at %v", taken, later)
	}
	// A slice deleted before its add reached the handler leaves nothing pending.
	gone := triggerSlice("gone", "svc-gone", later)
	cachedGone, err := src.transform(gone)
	if err != nil {
		t.Fatal(err)
	}
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: cachedGone})
	if n := len(src.triggers.pending) + len(src.triggers.ready); n != 0 {
		t.Errorf("%d trigger times left behind", n)
	}
}

func triggerSlice(name, svc string, at time.Time) *discovery.EndpointSlice {
	return &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		Labels:      map[string]string{discovery.LabelServiceName: svc},
		Annotations: map[string]string{v1.EndpointsLastChangeTriggerTime: at.Format(time.RFC3339Nano)}},
		AddressType: discovery.AddressTypeIPv4}
}

package source

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// BenchmarkRetainedObjects30k: the heap the informer caches keep for 30,000 Services and
// their EndpointSlices (4 endpoints each), decoded from protobuf as the daemon receives
// them (kube-proxy's content type), made compact, and stored in indexers like the
// informers', the slices also in the index by Service.
// The objects carry what the apiserver and the EndpointSlice controller write (managed
// fields, owner references, targetRefs, the trigger-time annotation, zones).
func BenchmarkRetainedObjects30k(b *testing.B) {
	const n = 30000
	svcs, slices := make([][]byte, n), make([][]byte, n)
	for i := range n {
		var err error
		if svcs[i], err = apiService(i).Marshal(); err != nil {
			b.Fatal(err)
		}
		if slices[i], err = apiSlice(i).Marshal(); err != nil {
			b.Fatal(err)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	transform := (&InformerSource{triggers: newTriggerBox(time.Now())}).transform
	for range b.N {
		base := heap()
		svcStore := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{})
		for _, raw := range svcs {
			svc := &v1.Service{}
			if err := svc.Unmarshal(raw); err != nil {
				b.Fatal(err)
			}
			obj, _ := transform(svc)
			_ = svcStore.Add(obj)
		}
		withServices := heap()
		sliceStore, bySvc := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{}), newSliceIndex()
		for _, raw := range slices {
			sl := &discovery.EndpointSlice{}
			if err := sl.Unmarshal(raw); err != nil {
				b.Fatal(err)
			}
			obj, _ := transform(sl)
			_ = sliceStore.Add(obj)
			bySvc.update(nil, obj.(*compactSlice))
		}
		withSlices := heap()
		if p := os.Getenv("IPVS_PROXIER_HEAP_PROFILE"); p != "" { // go tool pprof -sample_index=inuse_space
			if f, err := os.Create(p); err == nil {
				_ = pprof.WriteHeapProfile(f)
				_ = f.Close()
			}
		}
		runtime.KeepAlive(svcStore)
		runtime.KeepAlive(sliceStore)
		runtime.KeepAlive(bySvc)
		b.ReportMetric(float64(withServices-base)/(1<<20), "services-MiB")
		b.ReportMetric(float64(withSlices-withServices)/(1<<20), "slices-MiB")
	}
}

func apiMeta(name string, i int) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "bench", UID: types.UID(fmt.Sprintf("8f1c2a3e-0000-4000-8000-%012d", i)),
		ResourceVersion: fmt.Sprint(100000 + i), Generation: 1, CreationTimestamp: metav1.NewTime(time.Unix(1764800000, 0)),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:ports":{}}}`)}}}
}

func apiService(i int) *v1.Service {
	name := fmt.Sprintf("s-%05d", i)
	m := apiMeta(name, i)
	m.Labels = map[string]string{"app": name}
	ip := fmt.Sprintf("10.96.%d.%d", i>>8&255, i&255)
	s := &v1.Service{ObjectMeta: m, Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
		Ports:           []v1.ServicePort{{Name: "p", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		Selector:        map[string]string{"app": name},
		SessionAffinity: v1.ServiceAffinityNone, IPFamilies: []v1.IPFamily{v1.IPv4Protocol},
		IPFamilyPolicy:        ptr.To(v1.IPFamilyPolicySingleStack),
		InternalTrafficPolicy: ptr.To(v1.ServiceInternalTrafficPolicyCluster)}}
	if i%2 == 1 {
		s.Spec.Type, s.Spec.ExternalTrafficPolicy = v1.ServiceTypeNodePort, v1.ServiceExternalTrafficPolicyCluster
		s.Spec.Ports[0].NodePort = int32(30000 + i%2768)
	}
	return s
}

func apiSlice(i int) *discovery.EndpointSlice {
	svc := fmt.Sprintf("s-%05d", i)
	m := apiMeta(svc+"-abcde", i)
	m.GenerateName = svc + "-"
	m.Labels = map[string]string{discovery.LabelServiceName: svc, discovery.LabelManagedBy: "endpointslice-controller.k8s.io", "app": svc}
	m.Annotations = map[string]string{v1.EndpointsLastChangeTriggerTime: "2026-12-04T05:00:00Z"}
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc, UID: types.UID("u"), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	sl := &discovery.EndpointSlice{ObjectMeta: m, AddressType: discovery.AddressTypeIPv4,
		Ports: []discovery.EndpointPort{{Name: ptr.To("p"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)}}}
	for j := range 4 {
		sl.Endpoints = append(sl.Endpoints, discovery.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 128+j, i>>8&255, i&255)},
			Conditions: discovery.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			TargetRef:  &v1.ObjectReference{Kind: "Pod", Namespace: "bench", Name: fmt.Sprintf("%s-pod-%d", svc, j), UID: types.UID("pod-uid")},
			NodeName:   ptr.To(fmt.Sprintf("node-%d", j)), Zone: ptr.To("zone-a")})
	}
	return sl
}

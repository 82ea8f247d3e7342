package benchkit

import (
	"context"
	"fmt"
	gosync "sync"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Namespace holds the benchmarks' Services.
const Namespace = "bench"

// Workload creates the benchmarks' Services, as the TKE network benchmark does: half
// ClusterIP, half NodePort (one in NodePortEvery); every tenth a NodePort with
// ETP=Local, every tenth (another one) with ClientIP session affinity. Their endpoints
// are addresses on Node that nothing answers on.
type Workload struct {
	Client    kubernetes.Interface
	Node      string
	Endpoints int
	Parallel  int
	VIPs      []string // ClusterIP of Service i
	// Etcd, if set, is the apiserver's etcd: Grow writes all but the first few of each
	// step's Services there directly (etcdload.go).
	Etcd string
	// NodePortEvery makes Service i a NodePort when i % NodePortEvery is 1 (0 means 2:
	// half of them). 100,000 Services need 4: the NodePort range holds 40,000.
	NodePortEvery int
}

// The shapes of the workload's Services, or-ed.
const (
	shapeNodePort = 1 << iota
	shapeLocal    // ETP=Local (NodePorts only)
	shapeAffinity // ClientIP session affinity
)

// shape is Service i's shape.
func (w *Workload) shape(i int) int {
	s := 0
	if i%max(w.NodePortEvery, 2) == 1 {
		s |= shapeNodePort
		if i%10 == 1 {
			s |= shapeLocal
		}
	}
	if i%10 == 4 {
		s |= shapeAffinity
	}
	return s
}

// Describe says what the Services are, for a report.
func (w *Workload) Describe() string {
	every := max(w.NodePortEvery, 2)
	if every == 2 {
		return "Half ClusterIP, half NodePort (a tenth ETP=Local), a tenth with session affinity"
	}
	return fmt.Sprintf("One in %d a NodePort (those among every tenth ETP=Local), the rest ClusterIP, a tenth with session affinity", every)
}

// period is the length of the cycle of shapes: any run of it has every shape.
func (w *Workload) period() int {
	p := 10
	for p%max(w.NodePortEvery, 2) != 0 {
		p += 10
	}
	return p
}

// SvcName is Service i's name.
func SvcName(i int) string { return fmt.Sprintf("s-%05d", i) }

// EpIP is endpoint j of Service i: distinct for i < 65,536 and j < 64.
func EpIP(i, j int) string { return fmt.Sprintf("10.%d.%d.%d", 128+j, (i>>8)&255, i&255) }

func (w *Workload) service(name string, i int) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "p", Port: 80, Protocol: v1.ProtocolTCP}}}}
	shape := w.shape(i)
	if shape&shapeNodePort != 0 {
		s.Spec.Type = v1.ServiceTypeNodePort
		if shape&shapeLocal != 0 {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		}
	}
	if shape&shapeAffinity != 0 {
		s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
	}
	return s
}

func (w *Workload) slice(name string, i, endpoints int) *discovery.EndpointSlice {
	sl := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: Namespace,
		Labels:      map[string]string{discovery.LabelServiceName: name},
		Annotations: map[string]string{v1.EndpointsLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("p"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)}}}
	for j := range endpoints {
		sl.Endpoints = append(sl.Endpoints, discovery.Endpoint{Addresses: []string{EpIP(i, j)}, NodeName: ptr.To(w.Node),
			Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}})
	}
	return sl
}

// Create makes one Service and its slice, retrying what the apiserver sheds under load.
func (w *Workload) Create(ctx context.Context, name string, i, endpoints int) (string, error) {
	var svc *v1.Service
	err := retry(func() (err error) {
		svc, err = w.Client.CoreV1().Services(Namespace).Create(ctx, w.service(name, i), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			svc, err = w.Client.CoreV1().Services(Namespace).Get(ctx, name, metav1.GetOptions{})
		}
		return err
	})
	if err != nil {
		return "", err
	}
	err = retry(func() error {
		_, err := w.Client.DiscoveryV1().EndpointSlices(Namespace).Create(ctx, w.slice(name, i, endpoints), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	return svc.Spec.ClusterIP, err
}

// SetEndpoints rewrites Service i's slice with n endpoints.
func (w *Workload) SetEndpoints(ctx context.Context, name string, i, n int) error {
	return retry(func() error {
		cur, err := w.Client.DiscoveryV1().EndpointSlices(Namespace).Get(ctx, name+"-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		sl := w.slice(name, i, n)
		sl.ResourceVersion = cur.ResourceVersion
		_, err = w.Client.DiscoveryV1().EndpointSlices(Namespace).Update(ctx, sl, metav1.UpdateOptions{})
		return err
	})
}

// Delete removes a Service and its slice.
func (w *Workload) Delete(ctx context.Context, name string) error {
	_ = w.Client.DiscoveryV1().EndpointSlices(Namespace).Delete(ctx, name+"-1", metav1.DeleteOptions{})
	return w.Client.CoreV1().Services(Namespace).Delete(ctx, name, metav1.DeleteOptions{})
}

// Grow creates Services until there are n.
func (w *Workload) Grow(ctx context.Context, n int) error {
	if len(w.VIPs) == 0 {
		_, err := w.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	from := len(w.VIPs)
	if n <= from {
		return nil
	}
	w.VIPs = append(w.VIPs, make([]string, n-from)...)
	if w.Etcd != "" {
		return w.growDirect(ctx, from, n)
	}
	return w.growAPI(ctx, from, n)
}

// growAPI creates Services from through n-1 through the apiserver, with w.Parallel
// workers.
func (w *Workload) growAPI(ctx context.Context, from, n int) error {
	jobs := make(chan int)
	errs := make(chan error, w.Parallel)
	var wg gosync.WaitGroup
	for range w.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				vip, err := w.Create(ctx, SvcName(i), i, w.Endpoints)
				if err != nil {
					errs <- fmt.Errorf("service %d: %w", i, err)
					return
				}
				w.VIPs[i] = vip
			}
		}()
	}
	start := time.Now()
	for i := from; i < n; i++ {
		select {
		case jobs <- i:
		case err := <-errs:
			close(jobs)
			wg.Wait()
			return err
		}
		if (i+1)%5000 == 0 {
			Logf("created %d Services (%.0f/s)", i+1, float64(i+1-from)/time.Since(start).Seconds())
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	return nil
}

// retry retries fn on conflicts and server overload for up to a minute.
func retry(fn func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) ||
			!(apierrors.IsConflict(err) || apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	gosync "sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	v1 "k8s.io/api/core/v1"
	networking "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// Loading through the API is quadratic in kube-apiserver v1.37: its IPAddress-based
// ClusterIP allocator lists every IPAddress object, twice, after each allocation, for its
// metrics (pkg/registry/core/service/ipallocator/ipallocator.go: setAllocated(a.Used()),
// setAvailable(a.Free())), which was 76% of the apiserver's CPU at 10,000 Services and
// made 30,000 take 27 minutes. So the benchmarks write their objects into etcd directly,
// in the apiserver's storage format (protobuf), as the API would have stored them:
// every Service copied from one of its shape created through the API, with its own
// ClusterIP and NodePorts, the IPAddress object that records the ClusterIP (so later
// allocations through the API never pick it), and its EndpointSlice. The apiserver
// reads them through its etcd watch like any other write; the proxies see them through
// their informers. The NodePort bitmap is not written: the apiserver's NodePort repair
// loop rebuilds it from the Services, and the benchmarks create only ClusterIP Services
// through the API afterwards.

// etcdPrefix is kube-apiserver's default --etcd-prefix.
const etcdPrefix = "/registry/"

// etcdTxnOps is etcd's default --max-txn-ops: the most puts one transaction may carry.
const etcdTxnOps = 128

// etcdLoad is the state of direct writes: the client, the encoder, the templates and
// what is taken.
type etcdLoad struct {
	cli       *clientv3.Client
	enc       runtime.Encoder
	templates map[int]*v1.Service // by shape (Workload.shape)
	ipLabels  map[string]string   // of the API's IPAddress objects
	parent    *networking.ParentReference
	cidr      netip.Prefix
	nextIP    netip.Addr
	nextPort  int32
	takenIPs  map[netip.Addr]bool
	takenPort map[int32]bool
}

// growDirect creates Services from through n-1 (from < n): the first of every shape
// through the API, as templates, the rest straight into etcd.
func (w *Workload) growDirect(ctx context.Context, from, n int) error {
	api := min(n, from+w.period())
	if err := w.growAPI(ctx, from, api); err != nil {
		return err
	}
	if api == n {
		return nil
	}
	l, err := w.etcdLoader(ctx, from, api)
	if err != nil {
		return err
	}
	defer l.cli.Close()
	start := time.Now()
	jobs := make(chan []int)
	errs := make(chan error, w.Parallel)
	var wg gosync.WaitGroup
	var mu gosync.Mutex // guards l's allocation state
	for range w.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range jobs {
				if err := w.putBatch(ctx, l, &mu, batch); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var batch []int
	send := func() error {
		select {
		case jobs <- batch:
			batch = nil
			return nil
		case err := <-errs:
			return err
		}
	}
	for i := api; i < n && err == nil; i++ {
		if batch = append(batch, i); len(batch) == etcdTxnOps/3 {
			err = send()
		}
	}
	if err == nil && len(batch) > 0 {
		err = send()
	}
	close(jobs)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	if err != nil {
		return err
	}
	Logf("wrote %d Services, their IPAddresses and EndpointSlices to etcd in %v", n-api, time.Since(start).Round(time.Millisecond))
	return w.awaitServed(ctx, n)
}

// etcdLoader connects to etcd and reads the templates (Services from through api-1,
// made through the API) and what the apiserver allocated.
func (w *Workload) etcdLoader(ctx context.Context, from, api int) (*etcdLoad, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{w.Etcd}, DialTimeout: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	l := &etcdLoad{cli: cli, enc: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), templates: map[int]*v1.Service{},
		takenIPs: map[netip.Addr]bool{}, takenPort: map[int32]bool{}}
	fail := func(err error) (*etcdLoad, error) {
		cli.Close()
		return nil, err
	}
	// Taken: every ClusterIP the allocator recorded or a Service holds (the apiserver's
	// repair loop may have removed an IPAddress, below), every NodePort of any Service.
	ipas, err := w.Client.NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fail(err)
	}
	for _, a := range ipas.Items {
		if ip, err := netip.ParseAddr(a.Name); err == nil {
			l.takenIPs[ip] = true
		}
	}
	svcs, err := w.Client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fail(err)
	}
	for i := range svcs.Items {
		s := &svcs.Items[i]
		for _, ip := range s.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				l.takenIPs[a] = true
			}
		}
		for _, p := range s.Spec.Ports {
			l.takenPort[p.NodePort] = true
		}
		l.takenPort[s.Spec.HealthCheckNodePort] = true
	}
	for i := from; i < api; i++ {
		if l.templates[w.shape(i)], err = w.Client.CoreV1().Services(Namespace).Get(ctx, SvcName(i), metav1.GetOptions{}); err != nil {
			return fail(err)
		}
	}
	// The layout and formats the writes assume, checked on a template.
	t := l.templates[w.shape(from)]
	for _, key := range []string{"services/specs/" + Namespace + "/" + t.Name, "endpointslices/" + Namespace + "/" + t.Name + "-1", "ipaddresses/" + t.Spec.ClusterIP} {
		if r, err := cli.Get(ctx, etcdPrefix+key, clientv3.WithCountOnly()); err != nil || r.Count != 1 {
			return fail(fmt.Errorf("etcd holds no %s%s (%v): not the layout the loader writes", etcdPrefix, key, err))
		}
	}
	ipa, err := w.Client.NetworkingV1().IPAddresses().Get(ctx, t.Spec.ClusterIP, metav1.GetOptions{})
	if err != nil {
		return fail(err)
	}
	l.ipLabels, l.parent = ipa.Labels, ipa.Spec.ParentRef
	cidr, err := w.Client.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return fail(err)
	}
	for _, c := range cidr.Spec.CIDRs {
		if p, err := netip.ParsePrefix(c); err == nil && p.Addr().Is4() {
			l.cidr = p.Masked()
		}
	}
	if !l.cidr.IsValid() {
		return fail(fmt.Errorf("no IPv4 service CIDR in %v", cidr.Spec.CIDRs))
	}
	l.nextIP, l.nextPort = l.cidr.Addr().Next(), NodePortMin
	return l, nil
}

// allocate picks Service i's ClusterIP and NodePorts, as the API would have: a copy of
// its shape's template with free ones. Called with the loader's lock held.
func (l *etcdLoad) allocate(i, shape int) (*v1.Service, error) {
	for l.takenIPs[l.nextIP] {
		l.nextIP = l.nextIP.Next()
	}
	ip := l.nextIP
	if !l.cidr.Contains(ip.Next()) { // the last address is the broadcast address
		return nil, fmt.Errorf("service CIDR %s is full", l.cidr)
	}
	l.takenIPs[ip] = true
	s := l.templates[shape].DeepCopy()
	s.Spec.ClusterIP, s.Spec.ClusterIPs = ip.String(), []string{ip.String()}
	port := func() (int32, error) {
		for l.takenPort[l.nextPort] {
			l.nextPort++
		}
		if l.nextPort > NodePortMax {
			return 0, fmt.Errorf("NodePort range %d-%d is full", NodePortMin, NodePortMax)
		}
		l.takenPort[l.nextPort] = true
		return l.nextPort, nil
	}
	var err error
	for j := range s.Spec.Ports {
		if s.Spec.Ports[j].NodePort != 0 {
			if s.Spec.Ports[j].NodePort, err = port(); err != nil {
				return nil, err
			}
		}
	}
	if s.Spec.HealthCheckNodePort != 0 {
		if s.Spec.HealthCheckNodePort, err = port(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// putBatch writes Services batch (their indexes), each with its IPAddress and
// EndpointSlice, in one etcd transaction that creates each key only if absent.
func (w *Workload) putBatch(ctx context.Context, l *etcdLoad, mu *gosync.Mutex, batch []int) error {
	var ifs []clientv3.Cmp
	var puts []clientv3.Op
	now := metav1.NewTime(time.Now())
	// The apiserver's IPAddress repair loop deletes an IPAddress whose Service its
	// informer does not hold once the address is 60 s old (repairip.go: "appears to have
	// leaked"); with these writes it deleted ~5% of them at 5,000 Services although their
	// Services existed, and the next step's ClusterIPs then collided. Dated an hour ahead,
	// they outlive any benchmark step.
	ipCreated := metav1.NewTime(now.Add(time.Hour))
	put := func(key string, obj runtime.Object) error {
		var b bytes.Buffer
		if err := l.enc.Encode(obj, &b); err != nil {
			return fmt.Errorf("encode %s: %w", key, err)
		}
		ifs = append(ifs, clientv3.Compare(clientv3.CreateRevision(etcdPrefix+key), "=", 0))
		puts = append(puts, clientv3.OpPut(etcdPrefix+key, b.String()))
		return nil
	}
	for _, i := range batch {
		mu.Lock()
		s, err := l.allocate(i, w.shape(i))
		mu.Unlock()
		if err != nil {
			return err
		}
		name := SvcName(i)
		s.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
		s.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: Namespace, UID: uid(), CreationTimestamp: now}
		ip := &networking.IPAddress{TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "IPAddress"},
			ObjectMeta: metav1.ObjectMeta{Name: s.Spec.ClusterIP, Labels: l.ipLabels, UID: uid(), CreationTimestamp: ipCreated},
			Spec:       networking.IPAddressSpec{ParentRef: &networking.ParentReference{Group: l.parent.Group, Resource: l.parent.Resource, Namespace: Namespace, Name: name}}}
		sl := w.slice(name, i, w.Endpoints)
		sl.TypeMeta = metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"}
		sl.UID, sl.CreationTimestamp, sl.Generation = uid(), now, 1
		for key, obj := range map[string]runtime.Object{"services/specs/" + Namespace + "/" + name: s,
			"ipaddresses/" + s.Spec.ClusterIP: ip, "endpointslices/" + Namespace + "/" + sl.Name: sl} {
			if err := put(key, obj); err != nil {
				return err
			}
		}
		w.VIPs[i] = s.Spec.ClusterIP
	}
	r, err := l.cli.Txn(ctx).If(ifs...).Then(puts...).Commit()
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	if !r.Succeeded {
		return fmt.Errorf("etcd: Services %d-%d: a key already exists", batch[0], batch[len(batch)-1])
	}
	return nil
}

// awaitServed waits until the apiserver lists n Services in the namespace: it reads
// etcd's writes through its watch.
func (w *Workload) awaitServed(ctx context.Context, n int) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		l, err := w.Client.CoreV1().Services(Namespace).List(ctx, metav1.ListOptions{Limit: 1})
		have := 0
		if err == nil {
			have = len(l.Items)
			if l.RemainingItemCount != nil {
				have += int(*l.RemainingItemCount)
			}
		}
		if have >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the apiserver lists %d of %d Services 5 minutes after the etcd writes (%v)", have, n, err)
		}
		time.Sleep(time.Second)
	}
}

var uidCount struct {
	gosync.Mutex
	n uint64
}

// uidPrefix begins the UIDs of the objects the loader writes.
const uidPrefix = "0be4c400-0000-4000-8000-"

// uid is a new object UID, unique within the run.
func uid() types.UID {
	uidCount.Lock()
	defer uidCount.Unlock()
	uidCount.n++
	return types.UID(fmt.Sprintf("%s%012x", uidPrefix, uidCount.n))
}

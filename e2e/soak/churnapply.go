package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// Labels and the address the churn changes on the Node.
const (
	flipLabel       = "soak.ipvs-proxier.io/flip"
	nodeExtraIPAddr = "192.0.2.77" // TEST-NET-1 (RFC 5737): an ExternalIP nothing routes
)

// churnApplier writes the churner's changes through the apiserver at a steady rate and
// counts them. A change the apiserver refused or could not take (it is down during a
// fault) is read back from the API before the Service is changed again.
type churnApplier struct {
	c       kubernetes.Interface
	ch      *churner
	applied atomic.Int64 // changes written
	failed  atomic.Int64 // changes the API did not take
	kinds   map[string]int
	dirty   map[int]bool
}

// run applies perMinute changes a minute until ctx ends.
func (a *churnApplier) run(ctx context.Context, perMinute int) {
	a.kinds, a.dirty = map[string]int{}, map[int]bool{}
	tick := time.NewTicker(time.Minute / time.Duration(max(perMinute, 1)))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for i := range a.dirty {
			if m, err := a.read(ctx, i); err == nil {
				a.ch.set(i, m)
				delete(a.dirty, i)
			}
		}
		o, ok := a.ch.next()
		if !ok {
			continue
		}
		err := a.apply(ctx, o)
		a.ch.written()
		if err != nil {
			a.failed.Add(1)
			if o.Index >= 0 {
				a.dirty[o.Index] = true
			}
			continue
		}
		a.applied.Add(1)
		a.kinds[o.Kind]++
	}
}

// read is Service i as the API has it now.
func (a *churnApplier) read(ctx context.Context, i int) (svcModel, error) {
	name := benchkit.SvcName(i)
	svc, err := a.c.CoreV1().Services(benchkit.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return modelOf(nil, nil), nil
	}
	if err != nil {
		return svcModel{}, err
	}
	sl, err := a.c.DiscoveryV1().EndpointSlices(benchkit.Namespace).Get(ctx, name+"-1", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sl, err = nil, nil
	}
	if err != nil {
		return svcModel{}, err
	}
	return modelOf(svc, sl), nil
}

// apply writes one change.
func (a *churnApplier) apply(ctx context.Context, o op) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	name := benchkit.SvcName(o.Index)
	svcs := a.c.CoreV1().Services(benchkit.Namespace)
	switch {
	case o.Index < 0:
		return a.applyNode(ctx, o.Node)
	case strings.HasPrefix(o.Kind, "endpoint-"):
		return a.writeSlice(ctx, o.Index, o.After)
	case o.Kind == opServiceDelete:
		_ = a.c.DiscoveryV1().EndpointSlices(benchkit.Namespace).Delete(ctx, name+"-1", metav1.DeleteOptions{})
		return svcs.Delete(ctx, name, metav1.DeleteOptions{})
	case o.Kind == opServiceCreate:
		svc, err := svcs.Create(ctx, newService(o.Index, o.After), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if err := a.setIngress(ctx, svc, o.Index); err != nil {
			return err
		}
		return a.writeSlice(ctx, o.Index, o.After)
	}
	var svc *v1.Service
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := svcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		applySpec(cur, o.After)
		svc, err = svcs.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	return a.setIngress(ctx, svc, o.Index)
}

// setIngress sets a LoadBalancer Service's ingress address by hand, as a cloud
// controller would, and clears it from a Service no longer of that type.
func (a *churnApplier) setIngress(ctx context.Context, svc *v1.Service, i int) error {
	want := []v1.LoadBalancerIngress(nil)
	if svc.Spec.Type == v1.ServiceTypeLoadBalancer {
		want = []v1.LoadBalancerIngress{{IP: lbIP(i)}}
	}
	if len(want) == len(svc.Status.LoadBalancer.Ingress) {
		return nil
	}
	svc.Status.LoadBalancer.Ingress = want
	_, err := a.c.CoreV1().Services(benchkit.Namespace).UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	return err
}

// writeSlice makes Service i's slice say what m says, with a new trigger time.
func (a *churnApplier) writeSlice(ctx context.Context, i int, m svcModel) error {
	api := a.c.DiscoveryV1().EndpointSlices(benchkit.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sl := sliceOf(i, m, metav1.Now())
		cur, err := api.Get(ctx, sl.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, sl, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		sl.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(ctx, sl, metav1.UpdateOptions{})
		return err
	})
}

// applyNode writes the Node's zone and flip labels (merged into its others) and adds or
// removes its extra ExternalIP.
func (a *churnApplier) applyNode(ctx context.Context, nd nodeModel) error {
	nodes := a.c.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Labels[v1.LabelTopologyZone] = map[bool]string{false: "zone-a", true: "zone-b"}[nd.ZoneB]
		n.Labels[flipLabel] = map[bool]string{false: "a", true: "b"}[nd.Flip]
		if n, err = nodes.Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return err
		}
		extra := v1.NodeAddress{Type: v1.NodeExternalIP, Address: nodeExtraIPAddr}
		has := slices.Contains(n.Status.Addresses, extra)
		switch {
		case nd.ExtraAddress && !has:
			n.Status.Addresses = append(n.Status.Addresses, extra)
		case !nd.ExtraAddress && has:
			n.Status.Addresses = slices.DeleteFunc(n.Status.Addresses, func(x v1.NodeAddress) bool { return x == extra })
		default:
			return nil
		}
		_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// loadModels reads every Service of the workload (n of them) and its slice.
func loadModels(ctx context.Context, c kubernetes.Interface, n int) ([]svcModel, error) {
	svcs, err := c.CoreV1().Services(benchkit.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	sls, err := c.DiscoveryV1().EndpointSlices(benchkit.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	bySvc := map[string]*discovery.EndpointSlice{}
	for i := range sls.Items {
		bySvc[sls.Items[i].Labels[discovery.LabelServiceName]] = &sls.Items[i]
	}
	out := make([]svcModel, n)
	for i := range out {
		out[i] = modelOf(nil, nil)
	}
	for i := range svcs.Items {
		s := &svcs.Items[i]
		var idx int
		if _, err := fmt.Sscanf(s.Name, "s-%d", &idx); err != nil || idx >= n {
			continue
		}
		out[idx] = modelOf(s, bySvc[s.Name])
	}
	return out, nil
}

package source

import (
	"context"
	"net/netip"
	"slices"
	"time"

	networking "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi"
)

// watchServiceCIDRs adds the informer over networking.k8s.io/v1 ServiceCIDRs (GA in
// Kubernetes 1.33), whose ranges the unallocated-ClusterIP check uses, as kube-proxy
// watches them (pkg/proxy/config, ServiceCIDRConfig). A change marks everything: the
// rules are part of the node config. HasSynced does not wait for it.
func (s *InformerSource) watchServiceCIDRs(client kubeapi.API, resync time.Duration, tracker *Tracker) {
	s.cidrs = s.informer(&networking.ServiceCIDR{}, resync,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := client.List(ctx, kubeapi.ServiceCIDRs, "", o)
			if apierrors.IsNotFound(err) && s.cidrsAbsent != nil {
				s.cidrsAbsentOnce.Do(func() { s.cidrsAbsent(err) })
			}
			return obj, err
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, kubeapi.ServiceCIDRs, "", o)
		})
	changed := func(any) { tracker.AllChanged() }
	_, _ = s.cidrs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: changed, DeleteFunc: changed,
		UpdateFunc: func(old, cur any) {
			if !slices.Equal(old.(*networking.ServiceCIDR).Spec.CIDRs, cur.(*networking.ServiceCIDR).Spec.CIDRs) {
				tracker.AllChanged()
			}
		},
	})
}

// OnServiceCIDRsAbsent calls fn once, the first time the apiserver answers the list of
// ServiceCIDRs with 404 Not Found: it does not serve networking.k8s.io/v1 servicecidrs
// (turned off by --runtime-config, or an apiserver before 1.33). ServiceCIDRs then
// stays nil, so the unallocated-ClusterIP check uses --service-cluster-ip-range; the
// informer keeps retrying, and follows the objects once they are served. Call it
// before Start.
func (s *InformerSource) OnServiceCIDRsAbsent(fn func(error)) { s.cidrsAbsent = fn }

// ServiceCIDRs implements Source: every range of every ServiceCIDR object, sorted, or
// nil until the informer has listed them.
func (s *InformerSource) ServiceCIDRs() []netip.Prefix {
	if s.cidrs == nil || !s.cidrs.HasSynced() {
		return nil
	}
	var out []netip.Prefix
	for _, o := range s.cidrs.GetStore().List() {
		for _, c := range o.(*networking.ServiceCIDR).Spec.CIDRs {
			if p, err := netip.ParsePrefix(c); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}

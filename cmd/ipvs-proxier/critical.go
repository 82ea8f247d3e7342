package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// criticalTimeout bounds the reads of the critical Services: past it the first full
// sync programs them first, as it would have.
const criticalTimeout = 10 * time.Second

// criticalSource reads the Services a new node needs first (default/kubernetes and the
// kube-system Services labelled k8s-app=kube-dns), their EndpointSlices and this node's
// Node straight from the API server, a few small lists where the informers list every
// Service and slice of the cluster. Lists, not gets: the daemon's ClusterRole lists and
// watches Services and slices, as kube-proxy's does.
func criticalSource(ctx context.Context, client kubeapi.API, nodeName string) (*source.StaticSource, error) {
	ctx, cancel := context.WithTimeout(ctx, criticalTimeout)
	defer cancel()
	src := source.NewStaticSource()
	nodes, err := kubeapi.ListAs[*v1.NodeList](ctx, client, kubeapi.Nodes, "",
		metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", nodeName).String()})
	if err != nil {
		return nil, fmt.Errorf("list the Node: %w", err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Name == nodeName { // what the selector asked; checked again
			src.SetNode(&nodes.Items[i])
		}
	}
	for _, q := range []struct{ ns, name, label string }{{"default", "kubernetes", ""}, {"kube-system", "", "k8s-app=kube-dns"}} {
		o := metav1.ListOptions{LabelSelector: q.label}
		if q.name != "" {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", q.name).String()
		}
		svcs, err := kubeapi.ListAs[*v1.ServiceList](ctx, client, kubeapi.Services, q.ns, o)
		if err != nil {
			return nil, fmt.Errorf("list the critical Services: %w", err)
		}
		var names []string
		for i := range svcs.Items {
			if q.name != "" && svcs.Items[i].Name != q.name {
				continue
			}
			src.SetService(&svcs.Items[i])
			names = append(names, svcs.Items[i].Name)
		}
		if len(names) == 0 {
			continue
		}
		slices, err := kubeapi.ListAs[*discovery.EndpointSliceList](ctx, client, kubeapi.EndpointSlices, q.ns, metav1.ListOptions{
			LabelSelector: discovery.LabelServiceName + " in (" + strings.Join(names, ",") + ")"})
		if err != nil {
			return nil, fmt.Errorf("list the critical Services' EndpointSlices: %w", err)
		}
		for i := range slices.Items {
			src.SetSlice(&slices.Items[i])
		}
	}
	return src, nil
}

// programCriticalEarly reads the critical Services (criticalSource) and has the syncer
// program them ahead of its first full sync (reconcile.Syncer.ProgramCriticalEarly),
// which waits for the informers' first list of the whole cluster.
func programCriticalEarly(ctx context.Context, log *zap.Logger, client kubeapi.API, nodeName string, syncer *reconcile.Syncer) {
	src, err := criticalSource(ctx, client, nodeName)
	if err != nil {
		log.Info("Cannot read the critical Services ahead of the informers; the first sync programs them first", zap.Error(err))
		return
	}
	syncer.ProgramCriticalEarly(src)
}

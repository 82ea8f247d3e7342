package main

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi/kubeapitest"
)

// TestCriticalSourceReadsOnlyThem: the early read holds the apiserver's Service, the
// cluster DNS Services and their slices, and this node, nothing else of the cluster.
func TestCriticalSourceReadsOnlyThem(t *testing.T) {
	svc := func(ns, name string, labels map[string]string) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	}
	sl := func(ns, name, svc string) *discovery.EndpointSlice {
		return &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{discovery.LabelServiceName: svc}}}
	}
	dns := map[string]string{"k8s-app": "kube-dns"}
	client := fake.NewClientset(
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}},
		svc("default", "kubernetes", nil), svc("default", "web", nil), svc("kube-system", "kube-dns", dns),
		svc("kube-system", "metrics", nil), svc("other", "kube-dns", dns),
		sl("default", "kubernetes", "kubernetes"), sl("default", "web-a", "web"), sl("kube-system", "kube-dns-a", "kube-dns"),
		sl("kube-system", "kube-dns-b", "kube-dns"), sl("kube-system", "metrics-a", "metrics"))
	src, err := criticalSource(context.Background(), kubeapitest.Clientset{Interface: client}, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	keys := src.ServiceKeys()
	slices.SortFunc(keys, func(a, b proxier.ServiceKey) int {
		if a.String() < b.String() {
			return -1
		}
		return 1
	})
	want := []proxier.ServiceKey{{Namespace: "default", Name: "kubernetes"}, {Namespace: "kube-system", Name: "kube-dns"}}
	if !slices.Equal(keys, want) {
		t.Errorf("Services %v, want %v", keys, want)
	}
	if n := len(src.Slices(want[1])); n != 2 {
		t.Errorf("%d slices of kube-dns, want 2", n)
	}
	if n := len(src.Slices(want[0])); n != 1 {
		t.Errorf("%d slices of kubernetes, want 1", n)
	}
	if node := src.Node(); node == nil || node.Name != "node-1" {
		t.Errorf("Node %v, want node-1", node)
	}
}

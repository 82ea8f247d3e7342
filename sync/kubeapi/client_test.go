package kubeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	networking "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// apiServer answers as the API server would (in JSON, which the client accepts after
// protobuf) and records each request as "METHOD path?query accept".
type apiServer struct {
	mu   sync.Mutex
	seen []string
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.seen = append(a.seen, fmt.Sprintf("%s %s %s", r.Method, r.URL.RequestURI(), r.Header.Get("Accept")))
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	item := map[string]any{"metadata": map[string]any{"name": "x", "namespace": "ns", "resourceVersion": "7"}}
	switch {
	case r.URL.Path == "/version":
		_ = json.NewEncoder(w).Encode(map[string]string{"gitVersion": "v1.37.2"})
	case r.URL.Query().Get("watch") == "true":
		obj := map[string]any{"kind": "Service", "apiVersion": "v1", "metadata": item["metadata"]}
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "ADDED", "object": obj})
	case r.Method == http.MethodGet:
		_ = json.NewEncoder(w).Encode(map[string]any{"metadata": map[string]any{"resourceVersion": "7"}, "items": []any{item}})
	default: // an Event written
		_ = json.NewEncoder(w).Encode(item)
	}
}

func (a *apiServer) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// TestClientAsksWhatTheGeneratedClientsAsk: each resource's list and watch go to its
// group's path, namespaced only where the resource is, with the options in the query
// and protobuf preferred; the answers decode into the resource's own types.
func TestClientAsksWhatTheGeneratedClientsAsk(t *testing.T) {
	srv := &apiServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c, err := NewForConfig(&rest.Config{Host: ts.URL, QPS: 50, Burst: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: "!service.kubernetes.io/headless", ResourceVersion: "0"}
	if l, err := ListAs[*v1.ServiceList](ctx, c, Services, "", sel); err != nil || len(l.Items) != 1 || l.Items[0].Name != "x" {
		t.Errorf("services: %v %v", l, err)
	}
	if l, err := ListAs[*discovery.EndpointSliceList](ctx, c, EndpointSlices, "kube-system", metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Errorf("slices: %v %v", l, err)
	}
	if l, err := ListAs[*v1.NodeList](ctx, c, Nodes, "ignored", metav1.ListOptions{FieldSelector: "metadata.name=n1"}); err != nil || len(l.Items) != 1 {
		t.Errorf("nodes: %v %v", l, err)
	}
	if l, err := ListAs[*networking.ServiceCIDRList](ctx, c, ServiceCIDRs, "", metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Errorf("servicecidrs: %v %v", l, err)
	}
	if _, err := ListAs[*v1.NodeList](ctx, c, Services, "", metav1.ListOptions{}); err == nil {
		t.Error("a ServiceList taken as a NodeList")
	}
	w, err := c.Watch(ctx, Services, "default", metav1.ListOptions{ResourceVersion: "7"})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	w.Stop()
	if s, ok := ev.Object.(*v1.Service); ev.Type != watch.Added || !ok || s.Name != "x" {
		t.Errorf("watch event %v %+v", ev.Type, ev.Object)
	}
	if err := c.Version(ctx); err != nil {
		t.Errorf("version: %v", err)
	}
	if _, err := c.Events().Create(&v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web.1"}}); err != nil {
		t.Errorf("event: %v", err)
	}
	if _, err := c.Events().Patch(&v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web.1"}}, []byte(`{"count":2}`)); err != nil {
		t.Errorf("event patch: %v", err)
	}
	pb := "application/vnd.kubernetes.protobuf,application/json"
	want := []string{
		"GET /api/v1/services?labelSelector=%21service.kubernetes.io%2Fheadless&resourceVersion=0 " + pb,
		"GET /apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices " + pb,
		"GET /api/v1/nodes?fieldSelector=metadata.name%3Dn1 " + pb,
		"GET /apis/networking.k8s.io/v1/servicecidrs " + pb,
		"GET /api/v1/services " + pb,
		"GET /api/v1/namespaces/default/services?resourceVersion=7&watch=true " + pb,
		"GET /version application/json, */*",
		"POST /api/v1/namespaces/shop/events application/json, */*",
		"PATCH /api/v1/namespaces/shop/events/web.1 application/json, */*",
	}
	got := srv.requests()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

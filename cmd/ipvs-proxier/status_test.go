package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/sync/health"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
	"github.com/ipvs-proxier/ipvs-proxier/sync/pressure"
)

func TestStatusCommand(t *testing.T) {
	now := time.Now()
	var r statusReport
	r.Node, r.Version, r.RulesBackend = "node-1", "v9", "nftables"
	r.Sync.Healthy, r.Sync.Ready, r.Sync.LastSync, r.Sync.LastFull, r.Sync.Syncs = true, true, now.Add(-3*time.Second), true, 12
	r.Counts = metrics.Counts{Services: 2, VirtualServers: 5, RealServers: 9, SetEntries: 4, Addresses: 3}
	r.Conntrack = pressure.State{Entries: 850, Max: 1000, Usage: 0.85, Pressure: true, Since: now, Suggest: 2048}
	r.APIServer = health.APIServerState{Server: "https://10.96.0.1:443", Error: "dial tcp 10.96.0.1:443: i/o timeout", Since: now.Add(-time.Minute)}
	r.TopVirtualServers = []topVS{{Service: "shop/front", VirtualServer: "TCP 10.96.1.1:443", Connections: 42}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/status" {
			http.NotFound(w, req)
			return
		}
		_ = json.NewEncoder(w).Encode(r)
	}))
	defer srv.Close()
	var out bytes.Buffer
	if err := runStatus([]string{"--address", strings.TrimPrefix(srv.URL, "http://")}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"node node-1", "rules:      nftables\n", "healthy, ready", "(full,", "12 syncs", "5 virtual servers", "9 real servers",
		"[##########################....]  85.0%", "850 / 1000", "PRESSURE", "2048", "42", "TCP 10.96.1.1:443", "shop/front",
		"apiserver:  https://10.96.0.1:443 UNREACHABLE for 1m0s: dial tcp 10.96.0.1:443: i/o timeout"} {
		if !strings.Contains(got, want) {
			t.Errorf("status output lacks %q:\n%s", want, got)
		}
	}
	if err := runStatus([]string{"--address", "127.0.0.1:1"}, &out); err == nil || !strings.Contains(err.Error(), "daemon running") {
		t.Errorf("no daemon: %v", err)
	}
}

func TestBar(t *testing.T) {
	for _, tt := range []struct {
		ratio float64
		want  string
	}{{0, "[....]"}, {0.5, "[##..]"}, {1, "[####]"}, {1.7, "[####]"}, {-1, "[....]"}} {
		if got := bar(tt.ratio, 4); got != tt.want {
			t.Errorf("bar(%v) = %s, want %s", tt.ratio, got, tt.want)
		}
	}
}

func TestNodeEligible(t *testing.T) {
	del := metav1.Now()
	for _, tt := range []struct {
		name string
		node *v1.Node
		want bool
	}{
		{"missing", nil, false},
		{"plain", &v1.Node{}, true},
		{"deleting", &v1.Node{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &del}}, false},
		{"autoscaler removing it", &v1.Node{Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: taintToBeDeleted, Effect: v1.TaintEffectNoSchedule}}}}, false},
		{"other taint", &v1.Node{Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "x", Effect: v1.TaintEffectNoSchedule}}}}, true},
	} {
		if got := nodeEligible(tt.node); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

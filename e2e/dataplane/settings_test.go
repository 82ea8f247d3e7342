package main

import (
	"strings"
	"testing"
	"time"
)

func TestReadSettings(t *testing.T) {
	t.Setenv("DP_PROXIES", "ipvs-proxier, nftables,ipvs,ipvs-proxier,ipvs-proxier-stopped,ipvs-proxier-bare,ipvs-adopting")
	t.Setenv("DP_SIZES", "100,2000")
	t.Setenv("DP_BUDGETS", "2000=3m")
	t.Setenv("DP_PROXIES_2000", "iptables,iptables-legacy,kube-router")
	s, err := readSettings()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range s.proxies {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "ipvs-proxier,kube-proxy nftables,kube-proxy,ipvs-proxier,ipvs-proxier, stopped during the loads,ipvs-proxier, stopped, without the rules kube-proxy IPVS lacks,kube-proxy, adopting ours' state" {
		t.Errorf("proxies %s", got)
	}
	if s.proxies[4].Start != s.proxies[0].Start {
		t.Errorf("ours stopped during the loads starts as %q, ours as %q", s.proxies[4].Start, s.proxies[0].Start)
	}
	for i, want := range []bool{false, false, false, false, true, true, false} {
		if got := stoppedDuringLoads(s.proxies[i].Name); got != want {
			t.Errorf("%s stopped during the loads: %v", s.proxies[i].Name, got)
		}
		if got := adopting(s.proxies[i].Name); got != (i == 6) {
			t.Errorf("%s adopting ours' state: %v", s.proxies[i].Name, got)
		}
	}
	if s.proxies[6].Start != s.proxies[2].Start {
		t.Errorf("kube-proxy adopting ours' state starts as %q, kube-proxy as %q", s.proxies[6].Start, s.proxies[2].Start)
	}
	legacy := s.proxiesFor(2000)[1]
	if plain := s.proxiesFor(2000)[0]; legacy.Name != plain.Name+legacySuffix || !strings.HasSuffix(legacy.Start, plain.Start) ||
		!strings.Contains(legacy.Start, "PATH=/tmp/legacy:") {
		t.Errorf("kube-proxy iptables on the legacy backend is %q, starting as %q", legacy.Name, legacy.Start)
	}
	if !strings.Contains(s.proxies[1].Start, "mode: nftables") || len(s.sizes) != 2 || s.sizes[1] != 2000 {
		t.Errorf("settings %+v", s)
	}
	if ps := s.proxiesFor(2000); len(ps) != 3 || ps[0].Name != "kube-proxy iptables" || ps[2].Name != "kube-router" || ps[2].Metrics != "" || len(s.proxiesFor(100)) != 7 {
		t.Errorf("proxies by size: %v at 2000, %d at 100", ps, len(s.proxiesFor(100)))
	}
	if s.budgetFor(2000) != 3*time.Minute || s.budgetFor(100) != 30*time.Minute {
		t.Errorf("budgets %v, %v", s.budgetFor(2000), s.budgetFor(100))
	}
	t.Setenv("DP_BUDGETS", "2000:3m")
	if _, err := readSettings(); err == nil {
		t.Error("a malformed DP_BUDGETS was accepted")
	}
	t.Setenv("DP_BUDGETS", "")
	t.Setenv("DP_PROXIES_2000", "ipvs,cilium")
	if _, err := readSettings(); err == nil {
		t.Error("an unknown proxy in DP_PROXIES_2000 was accepted")
	}
	t.Setenv("DP_PROXIES_2000", "")
	t.Setenv("DP_PROXIES", "cilium")
	if _, err := readSettings(); err == nil {
		t.Error("an unknown proxy was accepted")
	}
}

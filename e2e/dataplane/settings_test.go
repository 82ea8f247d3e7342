package main

import (
	"strings"
	"testing"
)

func TestReadSettings(t *testing.T) {
	t.Setenv("DP_PROXIES", "ipvs-proxier, nftables,ipvs,ipvs-proxier")
	t.Setenv("DP_SIZES", "100,2000")
	s, err := readSettings()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range s.proxies {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "ipvs-proxier,kube-proxy nftables,kube-proxy,ipvs-proxier" {
		t.Errorf("proxies %s", got)
	}
	if !strings.Contains(s.proxies[1].Start, "mode: nftables") || len(s.sizes) != 2 || s.sizes[1] != 2000 {
		t.Errorf("settings %+v", s)
	}
	t.Setenv("DP_PROXIES", "cilium")
	if _, err := readSettings(); err == nil {
		t.Error("an unknown proxy was accepted")
	}
}

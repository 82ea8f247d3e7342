package main

import "testing"

// TestMaxCount: the largest of a metric's series (one per IP family), -1 for none.
func TestMaxCount(t *testing.T) {
	out := "kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family=\"IPv4\"} 3\nkubeproxy_sync_proxy_rules_duration_seconds_count{ip_family=\"IPv6\"} 1\n"
	if n := maxCount(out); n != 3 {
		t.Errorf("maxCount = %d, want 3", n)
	}
	if n := maxCount(""); n != -1 {
		t.Errorf("maxCount of nothing = %d, want -1", n)
	}
}

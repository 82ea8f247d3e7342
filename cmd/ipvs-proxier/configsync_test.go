package main

import (
	"strings"
	"testing"
	"time"
)

// TestConfigSyncPeriod: kube-proxy's configSyncPeriod (file or --config-sync-period) is
// the informers' resync period; 0s in the file (kubeadm writes it) keeps the 15m
// default, and a flag of 0 is refused as kube-proxy's validation refuses it.
func TestConfigSyncPeriod(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		flags      []string
		want       time.Duration
		err        string
	}{
		{"default", "", nil, 15 * time.Minute, ""},
		{"kubeadm's 0s", "configSyncPeriod: 0s", nil, 15 * time.Minute, ""},
		{"file", "configSyncPeriod: 5m", nil, 5 * time.Minute, ""},
		{"flag", "", []string{"--config-sync-period=1h"}, time.Hour, ""},
		{"flag 0", "", []string{"--config-sync-period=0"}, 0, "--config-sync-period 0s: must be greater than 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := configured(t, tc.flags, tc.conf)
			_, err := resolveNode(o)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || o.configSyncPeriod != tc.want {
				t.Errorf("configSyncPeriod %v (%v), want %v", o.configSyncPeriod, err, tc.want)
			}
		})
	}
}

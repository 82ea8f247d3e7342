package main

import (
	"net/netip"
	"testing"
)

// TestBindAddress: kube-proxy's bindAddress (file or flag) reaches the syncer as the
// primary-IP override when it names one IP; the unspecified default overrides nothing.
func TestBindAddress(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		conf  string
		want  netip.Addr
	}{
		{"default", nil, "", netip.Addr{}},
		{"kubeadm's 0.0.0.0", nil, "bindAddress: 0.0.0.0", netip.Addr{}},
		{"::", nil, "bindAddress: '::'", netip.Addr{}},
		{"file", nil, "bindAddress: 10.0.0.5", netip.MustParseAddr("10.0.0.5")},
		{"flag", []string{"--bind-address=fd00::5"}, "", netip.MustParseAddr("fd00::5")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := resolveNode(configured(t, tc.flags, tc.conf))
			if err != nil {
				t.Fatal(err)
			}
			if r.sync.BindAddress != tc.want {
				t.Errorf("BindAddress %v, want %v", r.sync.BindAddress, tc.want)
			}
		})
	}
}

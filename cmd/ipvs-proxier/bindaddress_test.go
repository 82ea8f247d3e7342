package main

import (
	"net/netip"
	"testing"
)

// TestBindAddress: kube-proxy's bindAddress (file or flag) reaches the syncer as the
// primary-IP override when it names one IP; the unspecified default overrides nothing.
func TestBindAddress(t *testing.T) {
	const head = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
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
		{"flag over file", []string{"--bind-address=fd00::5"}, "bindAddress: 10.0.0.5", netip.MustParseAddr("fd00::5")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOptions("t")
			if err := o.fs.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			if w, err := o.applyConfig([]byte(head + tc.conf + "\n")); err != nil || len(w) > 0 {
				t.Fatalf("%v %v", w, err)
			}
			r, err := o.resolve(func() (string, error) { return "n", nil })
			if err != nil {
				t.Fatal(err)
			}
			if r.sync.BindAddress != tc.want {
				t.Errorf("BindAddress %v, want %v", r.sync.BindAddress, tc.want)
			}
		})
	}
}

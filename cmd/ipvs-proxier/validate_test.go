package main

import (
	"strings"
	"testing"
)

// TestValidatesListenersTimeoutsAndDevice: a bad listener address, a negative IPVS
// timeout or an impossible dummy device name fails at start naming the flag or the
// config field, as kube-proxy's validation does.
func TestValidatesListenersTimeoutsAndDevice(t *testing.T) {
	host := func() (string, error) { return "node-1", nil }
	for _, tc := range []struct {
		args   []string
		config string
		want   string // in the error; "" for none
	}{
		{args: []string{"--healthz-bind-address", "0.0.0.0:102560"}, want: "--healthz-bind-address"},
		{args: []string{"--metrics-bind-address", "localhost:10249"}, want: "--metrics-bind-address"},
		{args: []string{"--metrics-bind-address", "127.0.0.1:"}, want: "--metrics-bind-address"},
		{args: []string{"--ipvs-tcp-timeout=-1s"}, want: "--ipvs-tcp-timeout"},
		{args: []string{"--ipvs-udp-timeout=-5s"}, want: "--ipvs-udp-timeout"},
		{args: []string{"--dummy-device", "kube/ipvs0"}, want: "--dummy-device"},
		{args: []string{"--dummy-device", "kube-ipvs0-dummy0"}, want: "--dummy-device"},
		{args: []string{"--dummy-device", ""}, want: "--dummy-device"},
		{config: "healthzBindAddress: 0.0.0.0:102560\n", want: "healthzBindAddress in"},
		{config: "metricsBindAddress: 127.0.0.1\n", want: "metricsBindAddress in"},
		{config: "ipvs:\n  tcpTimeout: -1s\n", want: "ipvs.tcpTimeout"},
		{args: []string{"--metrics-bind-address", "0.0.0.0", "--healthz-bind-address", "::"}},
		{args: []string{"--healthz-bind-address", "0"}},
		{config: "metricsBindAddress: 0.0.0.0:10249\nhealthzBindAddress: \"[::]:10256\"\n"},
	} {
		o := newOptions("t")
		if err := o.fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		var err error
		if tc.config != "" {
			o.configFile = "config.conf"
			_, err = o.applyConfig([]byte("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n" + tc.config))
		}
		if err == nil {
			_, err = o.resolve(host)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v %q: %v, want no error", tc.args, tc.config, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v %q: err %v, want one naming %s", tc.args, tc.config, err, tc.want)
		}
	}
}

// TestFlagAddressGetsDefaultPort: as kube-proxy's Complete, a listener flag given an IP
// alone listens on the default port.
func TestFlagAddressGetsDefaultPort(t *testing.T) {
	o := newOptions("t")
	if err := o.fs.Parse([]string{"--metrics-bind-address", "0.0.0.0", "--healthz-bind-address", "::1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.resolve(func() (string, error) { return "n", nil }); err != nil {
		t.Fatal(err)
	}
	if o.metricsAddr != "0.0.0.0:10249" || o.healthzAddr != "[::1]:10256" {
		t.Errorf("metrics %q health %q, want 0.0.0.0:10249 and [::1]:10256", o.metricsAddr, o.healthzAddr)
	}
}

package proxier

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// TestExternalIPsGate: with the AllowServiceExternalIPs feature gate off, a Service's
// externalIPs are neither programmed nor bound, and none is reported as a problem, as
// kube-proxy's ServicePort.ExternalIPs returns none (pkg/proxy/serviceport.go; the
// hardening for CVE-2020-8554).
func TestExternalIPsGate(t *testing.T) {
	tcp := v1.ProtocolTCP
	off := func(c *Config) { c.IgnoreExternalIPs = true }
	withExternal := func(s *v1.Service) { s.Spec.ExternalIPs = []string{"50.60.70.81", "0.0.0.0", "2012::51"} }
	runTranslateCases(t, []translateCase{{
		name:    "gate on: programmed and bound",
		svc:     makeService("ns", "ext", func(s *v1.Service) { s.Spec.ExternalIPs = []string{"50.60.70.81"} }),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "ext", "s1", tcp, ep{ip: "10.180.0.1"})},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}, "TCP 50.60.70.81:80": {"10.180.0.1:80"}},
		wantSet: map[string][]string{"KUBE-EXTERNAL-IP": {"50.60.70.81,tcp:80"}},
		bind:    []string{"10.20.30.41", "50.60.70.81"},
	}, {
		name:    "gate off: neither programmed nor bound, no problem",
		cfg:     []func(*Config){off},
		svc:     makeService("ns", "ext", withClusterIPs("10.20.30.41", "2020::1"), withExternal),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "ext", "s1", tcp, ep{ip: "10.180.0.1"})},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}, "TCP [2020::1]:80": {}},
		wantSet: map[string][]string{"KUBE-EXTERNAL-IP": nil, "KUBE-EXTERNAL-IP-LOCAL": nil, "KUBE-6-EXTERNAL-IP": nil},
		bind:    []string{"10.20.30.41", "2020::1"},
	}})
}

package conformance

import (
	"slices"
	"strings"
	"testing"
)

func TestShapes(t *testing.T) {
	for _, tc := range []struct {
		shape, nodeIPs, args string
	}{
		{"ipv4", "192.168.100.12", "--allocate-node-cidrs --cluster-cidr 10.244.0.0/16 --service-cluster-ip-range 10.96.0.0/16 --node-cidr-mask-size 24"},
		{"dual-stack", "192.168.100.12,fd00:100::12", "--allocate-node-cidrs --cluster-cidr 10.244.0.0/16,fd00:10:244::/56 --service-cluster-ip-range 10.96.0.0/16,fd00:96::/112 --node-cidr-mask-size-ipv4 24 --node-cidr-mask-size-ipv6 64"},
		{"ipv6-first", "fd00:100::12,192.168.100.12", "--allocate-node-cidrs --cluster-cidr fd00:10:244::/56,10.244.0.0/16 --service-cluster-ip-range fd00:96::/112,10.96.0.0/16 --node-cidr-mask-size-ipv6 64 --node-cidr-mask-size-ipv4 24"},
	} {
		s, err := LookupShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.NodeIPs(1); got != tc.nodeIPs {
			t.Errorf("%s: node-2's IPs %s, want %s", tc.shape, got, tc.nodeIPs)
		}
		if got := strings.Join(s.ControllerArgs(), " "); got != tc.args {
			t.Errorf("%s: controller-manager %s\nwant %s", tc.shape, got, tc.args)
		}
	}
	three, _ := LookupShape("three-zones")
	if three.Nodes != 3 || !three.DualStack() || Zone(2) != "zone-c" {
		t.Errorf("three-zones: %+v, zone %s", three, Zone(2))
	}
	if _, err := LookupShape("ipv5"); err == nil {
		t.Error("an unknown shape accepted")
	}
	var names []string
	for _, s := range Shapes {
		names = append(names, s.Name)
	}
	if !slices.Contains(names, DefaultShape) {
		t.Errorf("the default shape %q is not one of %v", DefaultShape, names)
	}
}

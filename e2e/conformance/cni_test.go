package conformance

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestConflist(t *testing.T) {
	pn := PodNetwork{PodCIDRs: []string{"10.244.1.0/24", "fd00:10:244:1::/64"}, ClusterCIDRs: []string{"10.244.0.0/16", "fd00:10:244::/56"}}
	c, err := pn.Conflist()
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Plugins []struct {
			Type        string `json:"type"`
			IsGateway   bool   `json:"isGateway"`
			IPMasq      bool   `json:"ipMasq"`
			HairpinMode bool   `json:"hairpinMode"`
			IPAM        struct {
				Ranges [][]struct{ Subnet, Gateway string } `json:"ranges"`
				Routes []struct{ Dst string }               `json:"routes"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(c), &conf); err != nil {
		t.Fatal(err)
	}
	br := conf.Plugins[0]
	if br.Type != "bridge" || !br.IsGateway || br.IPMasq || !br.HairpinMode {
		t.Errorf("bridge plugin: %+v", br)
	}
	if r := br.IPAM.Ranges[0][0]; r.Subnet != "10.244.1.0/24" || r.Gateway != "10.244.1.1" {
		t.Errorf("range %+v, want 10.244.1.0/24 via 10.244.1.1", r)
	}
	if len(br.IPAM.Ranges) != 2 || br.IPAM.Ranges[1][0].Subnet != "fd00:10:244:1::/64" || br.IPAM.Ranges[1][0].Gateway != "fd00:10:244:1::1" {
		t.Errorf("ranges %+v, want the IPv6 one second, via fd00:10:244:1::1", br.IPAM.Ranges)
	}
	if len(br.IPAM.Routes) != 2 || br.IPAM.Routes[0].Dst != "0.0.0.0/0" || br.IPAM.Routes[1].Dst != "::/0" {
		t.Errorf("routes %+v, want a default route per family", br.IPAM.Routes)
	}
	if conf.Plugins[1].Type != "portmap" {
		t.Errorf("second plugin %q", conf.Plugins[1].Type)
	}
	for _, bad := range [][]string{nil, {""}, {"10.244.1.5/24"}, {"10.244.1.0/31"}, {"nonsense"}, {"fd00::/127"},
		{"10.244.1.0/24", "10.244.2.0/24"}, {"10.244.1.0/24", "fd00::/64", "fd01::/64"}} {
		if _, err := (PodNetwork{PodCIDRs: bad}).Conflist(); err == nil {
			t.Errorf("podCIDRs %q accepted", bad)
		}
	}
}

func TestScript(t *testing.T) {
	pn := PodNetwork{PodCIDRs: []string{"10.244.0.0/24", "fd00:10:244::/64"}, ClusterCIDRs: []string{"10.244.0.0/16", "fd00:10:244::/56"},
		Peers: map[string]string{"10.244.2.0/24": "192.168.100.13", "10.244.1.0/24": "192.168.100.12", "fd00:10:244:1::/64": "fd00:100::12"}}
	s, err := pn.Script()
	if err != nil {
		t.Fatal(err)
	}
	r1 := strings.Index(s, "ip route replace 10.244.1.0/24 via 192.168.100.12\n")
	r2 := strings.Index(s, "ip route replace 10.244.2.0/24 via 192.168.100.13\n")
	if r1 < 0 || r2 < r1 {
		t.Errorf("routes missing or unordered:\n%s", s)
	}
	for _, want := range []string{"/etc/cni/net.d/10-conformance.conflist", "bridge-nf-call-iptables", "ipv6/conf/all/forwarding",
		"ip route replace fd00:10:244:1::/64 via fd00:100::12\n", "-s 10.244.0.0/16 ! -d 10.244.0.0/16 -o eth0 -j MASQUERADE"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "fd00:10:244::/56 -o eth0") {
		t.Errorf("IPv6 masqueraded through the uplink, which has no IPv6:\n%s", s)
	}
	pn.Peers["fd00:10:244:2::/64"] = "192.168.100.13"
	if _, err := pn.Script(); err == nil {
		t.Error("an IPv6 podCIDR through an IPv4 peer accepted")
	}
	delete(pn.Peers, "fd00:10:244:2::/64")
	pn.Peers["10.244.3.0/24"] = "not-an-ip"
	if _, err := pn.Script(); err == nil {
		t.Error("a peer with no address accepted")
	}
}

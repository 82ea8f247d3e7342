package conformance

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestConflist(t *testing.T) {
	pn := PodNetwork{PodCIDR: "10.244.1.0/24", ClusterCIDR: "10.244.0.0/16"}
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
	if conf.Plugins[1].Type != "portmap" {
		t.Errorf("second plugin %q", conf.Plugins[1].Type)
	}
	for _, bad := range []string{"", "10.244.1.5/24", "10.244.1.0/31", "nonsense"} {
		if _, err := (PodNetwork{PodCIDR: bad}).Conflist(); err == nil {
			t.Errorf("podCIDR %q accepted", bad)
		}
	}
}

func TestScript(t *testing.T) {
	pn := PodNetwork{PodCIDR: "10.244.0.0/24", ClusterCIDR: "10.244.0.0/16",
		Peers: map[string]string{"10.244.2.0/24": "192.168.100.13", "10.244.1.0/24": "192.168.100.12"}}
	s, err := pn.Script()
	if err != nil {
		t.Fatal(err)
	}
	r1 := strings.Index(s, "ip route replace 10.244.1.0/24 via 192.168.100.12\n")
	r2 := strings.Index(s, "ip route replace 10.244.2.0/24 via 192.168.100.13\n")
	if r1 < 0 || r2 < r1 {
		t.Errorf("routes missing or unordered:\n%s", s)
	}
	for _, want := range []string{"/etc/cni/net.d/10-conformance.conflist", "bridge-nf-call-iptables",
		"-s 10.244.0.0/16 ! -d 10.244.0.0/16 -o eth0 -j MASQUERADE"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	pn.Peers["10.244.3.0/24"] = "not-an-ip"
	if _, err := pn.Script(); err == nil {
		t.Error("a peer with no address accepted")
	}
}

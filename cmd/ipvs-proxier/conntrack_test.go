package main

import (
	"testing"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
)

// TestConntrackTimeouts: kube-proxy's conntrack.* timeouts and their flags, with
// kube-proxy's defaults (24h established, 1h close-wait, the rest left to the kernel); an
// explicit 0 in the file leaves the kernel's value.
func TestConntrackTimeouts(t *testing.T) {
	def := linux.ConntrackTimeouts{TCPEstablished: 24 * time.Hour, TCPCloseWait: time.Hour}
	cases := []struct {
		name  string
		flags []string
		conf  string
		want  linux.ConntrackTimeouts
	}{
		{"defaults", nil, "", def},
		{"kubeadm's file (nulls and 0s)", nil, "conntrack: {tcpEstablishedTimeout: null, tcpCloseWaitTimeout: null, udpTimeout: 0s, udpStreamTimeout: 0s, tcpBeLiberal: false}", def},
		{"every field", nil, "conntrack: {tcpEstablishedTimeout: 2h, tcpCloseWaitTimeout: 90s, udpTimeout: 10s, udpStreamTimeout: 1m, tcpBeLiberal: true}",
			linux.ConntrackTimeouts{TCPEstablished: 2 * time.Hour, TCPCloseWait: 90 * time.Second, UDP: 10 * time.Second, UDPStream: time.Minute, TCPBeLiberal: true}},
		{"explicit 0 leaves the kernel's", nil, "conntrack: {tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}", linux.ConntrackTimeouts{}},
		{"flags", []string{"--conntrack-tcp-timeout-established=3h", "--conntrack-tcp-be-liberal", "--conntrack-udp-timeout=5s", "--conntrack-udp-timeout-stream=2m", "--conntrack-tcp-timeout-close-wait=0"}, "",
			linux.ConntrackTimeouts{TCPEstablished: 3 * time.Hour, UDP: 5 * time.Second, UDPStream: 2 * time.Minute, TCPBeLiberal: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := configured(t, tc.flags, tc.conf)
			if w := o.kubeProxyWarnings(); len(w) > 0 {
				t.Errorf("warnings: %v", w)
			}
			if o.conntrack != tc.want {
				t.Errorf("got %+v, want %+v", o.conntrack, tc.want)
			}
		})
	}
}

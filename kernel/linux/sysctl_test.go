package linux

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func fakeProc(t *testing.T, release string, vals map[string]string) Sysctls {
	t.Helper()
	root := t.TempDir()
	s := Sysctls{Root: filepath.Join(root, "proc"), SysRoot: filepath.Join(root, "sys")}
	vals["kernel/osrelease"] = release
	for k, v := range vals {
		p := filepath.Join(s.Root, k)
		if k == "hashsize" {
			p = filepath.Join(s.SysRoot, "module/nf_conntrack/parameters/hashsize")
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func defaults() map[string]string {
	return map[string]string{
		"net/ipv4/vs/conntrack": "0", "net/ipv4/vs/expire_nodest_conn": "0", "net/ipv4/vs/expire_quiescent_template": "0",
		"net/ipv4/ip_forward": "1", "net/ipv4/vs/conn_reuse_mode": "1", "net/ipv4/conf/all/arp_ignore": "0",
		"net/ipv4/conf/all/arp_announce": "0", "net/netfilter/nf_conntrack_max": "65536", "hashsize": "16384",
		// Kernel 6.1's defaults.
		"net/netfilter/nf_conntrack_tcp_timeout_established": "432000", "net/netfilter/nf_conntrack_tcp_timeout_close_wait": "60",
		"net/netfilter/nf_conntrack_tcp_be_liberal": "0", "net/netfilter/nf_conntrack_udp_timeout": "30",
		"net/netfilter/nf_conntrack_udp_timeout_stream": "120",
	}
}

// TestSysctlsApply: required values set, changes reported (not the ones already right),
// conn_reuse_mode only below 5.9, strict ARP on request, conntrack max only raised and
// capped at 2^20, conntrack timeouts set where non-zero.
func TestSysctlsApply(t *testing.T) {
	cases := []struct {
		name    string
		release string
		cfg     SysctlConfig
		want    []SysctlChange
	}{
		{"6.1, defaults", "6.1.0-57-amd64", SysctlConfig{ConntrackMaxPerCore: 32768, ConntrackMin: 131072, CPUs: 2}, []SysctlChange{
			{"net/ipv4/vs/conntrack", 0, 1}, {"net/ipv4/vs/expire_nodest_conn", 0, 1}, {"net/ipv4/vs/expire_quiescent_template", 0, 1},
			{"net/netfilter/nf_conntrack_max", 65536, 131072}, {"module/nf_conntrack/parameters/hashsize", 16384, 32768}}},
		{"5.4 sets conn_reuse_mode, strict ARP", "5.4.0-150-generic", SysctlConfig{StrictARP: true}, []SysctlChange{
			{"net/ipv4/vs/conntrack", 0, 1}, {"net/ipv4/vs/expire_nodest_conn", 0, 1}, {"net/ipv4/vs/expire_quiescent_template", 0, 1},
			{"net/ipv4/vs/conn_reuse_mode", 1, 0}, {"net/ipv4/conf/all/arp_ignore", 0, 1}, {"net/ipv4/conf/all/arp_announce", 0, 2}}},
		{"conntrack max never lowered", "6.1.0", SysctlConfig{ConntrackMaxPerCore: 1000, ConntrackMin: 2000, CPUs: 2}, []SysctlChange{
			{"net/ipv4/vs/conntrack", 0, 1}, {"net/ipv4/vs/expire_nodest_conn", 0, 1}, {"net/ipv4/vs/expire_quiescent_template", 0, 1}}},
		{"conntrack max capped", "6.1.0", SysctlConfig{ConntrackMaxPerCore: 1 << 20, CPUs: 4}, []SysctlChange{
			{"net/ipv4/vs/conntrack", 0, 1}, {"net/ipv4/vs/expire_nodest_conn", 0, 1}, {"net/ipv4/vs/expire_quiescent_template", 0, 1},
			{"net/netfilter/nf_conntrack_max", 65536, 1 << 20}, {"module/nf_conntrack/parameters/hashsize", 16384, 1 << 18}}},
		{"kube-proxy's default conntrack timeouts; zero leaves the kernel's", "6.1.0",
			SysctlConfig{Conntrack: ConntrackTimeouts{TCPEstablished: 24 * time.Hour, TCPCloseWait: time.Hour}}, []SysctlChange{
				{"net/ipv4/vs/conntrack", 0, 1}, {"net/ipv4/vs/expire_nodest_conn", 0, 1}, {"net/ipv4/vs/expire_quiescent_template", 0, 1},
				{"net/netfilter/nf_conntrack_tcp_timeout_established", 432000, 86400},
				{"net/netfilter/nf_conntrack_tcp_timeout_close_wait", 60, 3600}}},
		{"every conntrack timeout", "6.1.0",
			SysctlConfig{Conntrack: ConntrackTimeouts{TCPEstablished: 2 * time.Hour, TCPCloseWait: 90 * time.Second,
				TCPBeLiberal: true, UDP: 10 * time.Second, UDPStream: time.Minute}}, []SysctlChange{
				{"net/ipv4/vs/conntrack", 0, 1}, {"net/ipv4/vs/expire_nodest_conn", 0, 1}, {"net/ipv4/vs/expire_quiescent_template", 0, 1},
				{"net/netfilter/nf_conntrack_tcp_timeout_established", 432000, 7200},
				{"net/netfilter/nf_conntrack_tcp_timeout_close_wait", 60, 90},
				{"net/netfilter/nf_conntrack_tcp_be_liberal", 0, 1},
				{"net/netfilter/nf_conntrack_udp_timeout", 30, 10},
				{"net/netfilter/nf_conntrack_udp_timeout_stream", 120, 60}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeProc(t, tc.release, defaults())
			got, err := s.Apply(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("changes\n got %v\nwant %v", got, tc.want)
			}
			if again, err := s.Apply(tc.cfg); err != nil || len(again) != 0 {
				t.Errorf("second apply changed %v (%v)", again, err)
			}
		})
	}
	t.Run("missing IPVS sysctls are an error", func(t *testing.T) {
		vals := defaults()
		delete(vals, "net/ipv4/vs/conntrack")
		if _, err := fakeProc(t, "6.1.0", vals).Apply(SysctlConfig{}); err == nil {
			t.Error("no error without net/ipv4/vs")
		}
	})
}

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Sysctls reads and writes kernel parameters under Root (normally /proc/sys) and
// module parameters under SysRoot (normally /sys). Tests point both at a folder.
type Sysctls struct {
	Root    string
	SysRoot string
}

// HostSysctls are the machine's own.
var HostSysctls = Sysctls{Root: "/proc/sys", SysRoot: "/sys"}

// SysctlChange is one value set, for the log.
type SysctlChange struct {
	Key      string
	Old, New int
}

// Get reads an integer parameter, e.g. "net/ipv4/ip_forward".
func (s Sysctls) Get(key string) (int, error) {
	b, err := os.ReadFile(filepath.Join(s.Root, key))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// ensure sets key to v unless it already is v; it reports the change made.
func (s Sysctls) ensure(path string, v int, changes *[]SysctlChange, key string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("sysctl %s: %w", key, err)
	}
	old, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("sysctl %s: %w", key, err)
	}
	if old == v {
		return nil
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(v)), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%d: %w", key, v, err)
	}
	*changes = append(*changes, SysctlChange{Key: key, Old: old, New: v})
	return nil
}

// SysctlConfig says which optional settings to make.
type SysctlConfig struct {
	StrictARP bool
	// ConntrackMaxPerCore and ConntrackMin size nf_conntrack_max as kube-proxy does;
	// a zero per-core value leaves it alone.
	ConntrackMaxPerCore, ConntrackMin int
	CPUs                              int
	// Conntrack holds the conntrack timeouts kube-proxy sets on every start.
	Conntrack ConntrackTimeouts
}

// ConntrackTimeouts are kube-proxy's conntrack.* timeouts (KubeProxyConntrackConfiguration):
// a zero duration leaves the kernel's value, as kube-proxy does
// (pkg/proxy/conntrack/sysctls.go); TCPBeLiberal is only ever switched on.
type ConntrackTimeouts struct {
	TCPEstablished, TCPCloseWait, UDP, UDPStream time.Duration
	TCPBeLiberal                                 bool
}

// conntrackMaxLimit caps the scaled nf_conntrack_max, as kube-proxy v1.37 does, against
// excessive memory on many-core machines.
const conntrackMaxLimit = 1 << 20

// KernelVersion returns the running kernel's major and minor version.
func (s Sysctls) KernelVersion() (int, int, error) {
	b, err := os.ReadFile(filepath.Join(s.Root, "kernel/osrelease"))
	if err != nil {
		return 0, 0, err
	}
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d.%d", &major, &minor); err != nil {
		return 0, 0, fmt.Errorf("kernel version %q: %w", b, err)
	}
	return major, minor, nil
}

// Apply makes the settings IPVS service proxying needs and returns what it changed.
// Values already right are not written.
func (s Sysctls) Apply(c SysctlConfig) ([]SysctlChange, error) {
	var changes []SysctlChange
	set := func(key string, v int) error { return s.ensure(filepath.Join(s.Root, key), v, &changes, key) }
	for _, kv := range []struct {
		key string
		v   int
	}{
		// Let iptables see IPVS-forwarded traffic, so masquerade and filter rules apply.
		{"net/ipv4/vs/conntrack", 1},
		// Drop connections to a deleted real server at once instead of blackholing them
		// until the IPVS timeout (kubernetes#71358).
		{"net/ipv4/vs/expire_nodest_conn", 1},
		// Expire persistence templates of weight-0 servers (kubernetes#81591).
		{"net/ipv4/vs/expire_quiescent_template", 1},
		{"net/ipv4/ip_forward", 1},
	} {
		if err := set(kv.key, kv.v); err != nil {
			return changes, err
		}
	}
	// conn_reuse_mode=0 avoids a 1 s stall on port reuse but breaks draining; kernel 5.9
	// fixed both, so it is only set on 4.1 <= kernel < 5.9 (kubernetes#93297, #102122).
	if major, minor, err := s.KernelVersion(); err == nil && (major == 4 && minor >= 1 || major == 5 && minor < 9) {
		if err := set("net/ipv4/vs/conn_reuse_mode", 0); err != nil {
			return changes, err
		}
	}
	if c.StrictARP {
		// Only the interface that owns an address answers ARP for it: VIPs on kube-ipvs0
		// stay silent, as MetalLB L2 needs (metallb#153).
		if err := set("net/ipv4/conf/all/arp_ignore", 1); err != nil {
			return changes, err
		}
		if err := set("net/ipv4/conf/all/arp_announce", 2); err != nil {
			return changes, err
		}
	}
	if c.ConntrackMaxPerCore > 0 {
		want := min(max(c.ConntrackMaxPerCore*c.CPUs, c.ConntrackMin), conntrackMaxLimit)
		cur, err := s.Get("net/netfilter/nf_conntrack_max")
		if err != nil {
			return changes, fmt.Errorf("sysctl net/netfilter/nf_conntrack_max: %w", err)
		}
		if cur < want { // only ever raised, as kube-proxy does
			if err := set("net/netfilter/nf_conntrack_max", want); err != nil {
				return changes, err
			}
		}
		// The hash table should hold a quarter of max entries per bucket chain.
		hp := filepath.Join(s.SysRoot, "module/nf_conntrack/parameters/hashsize")
		if b, err := os.ReadFile(hp); err == nil {
			if h, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && h < want/4 {
				if err := s.ensure(hp, want/4, &changes, "module/nf_conntrack/parameters/hashsize"); err != nil {
					return changes, err
				}
			}
		}
	}
	t := c.Conntrack
	for _, kv := range []struct {
		key string
		v   int
	}{
		{"net/netfilter/nf_conntrack_tcp_timeout_established", int(t.TCPEstablished / time.Second)},
		{"net/netfilter/nf_conntrack_tcp_timeout_close_wait", int(t.TCPCloseWait / time.Second)},
		{"net/netfilter/nf_conntrack_tcp_be_liberal", map[bool]int{true: 1}[t.TCPBeLiberal]},
		{"net/netfilter/nf_conntrack_udp_timeout", int(t.UDP / time.Second)},
		{"net/netfilter/nf_conntrack_udp_timeout_stream", int(t.UDPStream / time.Second)},
	} {
		if kv.v > 0 {
			if err := set(kv.key, kv.v); err != nil {
				return changes, err
			}
		}
	}
	return changes, nil
}

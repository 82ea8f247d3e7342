package proxier

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// The trace tests run a packet through what a fake kernel holds after the daemon's sync
// of a set of Services: the sets, the IPVS table, the dummy's addresses and the rules
// the syncer wrote into a kernel.Fake, once per rules backend, traced by
// kernel.Fake.Trace, which models the hooks an IPVS service packet meets
// (kernel/trace.go). kube-proxy's nftables tests trace packets the same way through
// knftables's fake after a sync (pkg/proxy/nftables/helpers_test.go).

// packet is a new connection's first packet.
type packet struct {
	src, dst netip.Addr
	proto    kernel.Protocol
	port     uint16
	// in is the interface it arrives on; "" for the node's own traffic.
	in string
}

// SyncFake runs the daemon's sync (sync/reconcile's Syncer) of svcs and their slices with
// cfg into a new fake kernel, and returns it with the config the sync resolved. This
// package cannot import the syncer, which imports it: the external test package sets it
// (trace_sync_test.go).
var SyncFake func(t *testing.T, cfg Config, svcs []*v1.Service, slices []*discovery.EndpointSlice) (*kernel.Fake, Config)

// world is a node after a sync, once per rules backend.
type world struct {
	fakes   map[*RulesBackend]*kernel.Fake
	nodeIPs map[*RulesBackend][]netip.Addr
}

// newWorld syncs the Services with their slices (by Service name) into a fake kernel per
// rules backend.
func newWorld(t *testing.T, cfg *Config, svcs []*v1.Service, eps map[string][]*discovery.EndpointSlice) *world {
	t.Helper()
	var slices []*discovery.EndpointSlice
	for _, s := range svcs {
		slices = append(slices, eps[s.Name]...)
	}
	w := &world{fakes: map[*RulesBackend]*kernel.Fake{}, nodeIPs: map[*RulesBackend][]netip.Addr{}}
	for _, b := range []*RulesBackend{RulesIptables, RulesNftables} {
		bcfg := *cfg
		bcfg.RulesBackend = b
		fk, synced := SyncFake(t, bcfg, svcs, slices)
		w.fakes[b], w.nodeIPs[b] = fk, synced.NodeIPs
	}
	return w
}

// trace runs p through the node of each backend; both must reach the same verdict.
func (w *world) trace(t *testing.T, p packet) kernel.Verdict {
	t.Helper()
	kp := kernel.Packet{Src: p.src, Dst: p.dst, Protocol: p.proto, Port: p.port, In: p.in}
	var first kernel.Verdict
	for i, b := range []*RulesBackend{RulesIptables, RulesNftables} {
		v, err := w.fakes[b].Trace(kp, w.nodeIPs[b])
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = v
		} else if v.String() != first.String() {
			t.Errorf("%v: %s backend: %v, iptables: %v\n%s", p, b, v, first, strings.Join(v.Steps, "\n"))
		}
	}
	return first
}

// pkt builds a TCP packet "SRC -> DST:PORT" arriving on in ("" for the node's own).
func pkt(src, dst string, port uint16, in string) packet {
	return packet{src: netip.MustParseAddr(src), dst: netip.MustParseAddr(dst), proto: kernel.TCP, port: port, in: in}
}

func (p packet) String() string {
	from := p.in
	if from == "" {
		from = "node"
	}
	return fmt.Sprintf("%s %s -> %s:%d via %s", p.proto, p.src, p.dst, p.port, from)
}

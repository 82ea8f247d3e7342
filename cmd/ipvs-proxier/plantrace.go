package main

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// parseTracePacket reads plan's --trace value, "SRC DST:PORT/PROTO": a new connection
// from SRC, arriving on in, or the node's own when SRC is one of the node's addresses
// (nodeIPs, or an address the plan bound on the dummy).
func parseTracePacket(s, in string, nodeIPs []netip.Addr, bound []netip.Addr) (kernel.Packet, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return kernel.Packet{}, fmt.Errorf("--trace %q: want \"SRC DST:PORT/PROTO\"", s)
	}
	src, err := netip.ParseAddr(f[0])
	if err != nil {
		return kernel.Packet{}, fmt.Errorf("--trace source: %w", err)
	}
	dst, proto, _ := strings.Cut(f[1], "/")
	ap, err := netip.ParseAddrPort(dst)
	if err != nil {
		return kernel.Packet{}, fmt.Errorf("--trace destination: %w", err)
	}
	p, ok := map[string]kernel.Protocol{"TCP": kernel.TCP, "UDP": kernel.UDP, "SCTP": kernel.SCTP}[strings.ToUpper(proto)]
	if !ok {
		return kernel.Packet{}, fmt.Errorf("--trace protocol %q: want tcp, udp or sctp", proto)
	}
	if src.Is4() != ap.Addr().Is4() {
		return kernel.Packet{}, fmt.Errorf("--trace %q: source and destination of different families", s)
	}
	pkt := kernel.Packet{Src: src, Dst: ap.Addr(), Protocol: p, Port: ap.Port(), In: in}
	if slices.Contains(nodeIPs, src) || slices.Contains(bound, src) {
		pkt.In = ""
	}
	return pkt, nil
}

// printTrace prints the packet's way through the rules the plan's fake kernel holds:
// each rule that matched, then the outcome, with IPVS's real servers when it gets there.
func printTrace(out io.Writer, fake *kernel.Fake, p kernel.Packet, nodeIPs []netip.Addr) error {
	v, err := fake.Trace(p, nodeIPs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n# trace %s\n", p)
	for _, s := range v.Steps {
		fmt.Fprintln(out, s)
	}
	_, err = fmt.Fprintf(out, "=> %s\n", v)
	return err
}

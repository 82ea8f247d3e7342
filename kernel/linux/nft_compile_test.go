package linux

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestParseRenderedNft: every table RenderNftRules writes (each detectLocalMode, with and
// without masqueradeAll, both families, out filters) compiles, with the chains in
// proxier.NftChains and every rule ending in a verdict or a NAT statement. The real
// kernel's reading of the result is TestNftablesRulesReal.
func TestParseRenderedNft(t *testing.T) {
	outFilters := []proxier.OutFilter{{VSKey: kernel.VSKey{Protocol: kernel.TCP, Address: netip.MustParseAddr("5.6.7.8"), Port: 80}},
		{VSKey: kernel.VSKey{Protocol: kernel.SCTP, Address: netip.MustParseAddr("fd00::8"), Port: 9}}}
	for _, mode := range append(proxier.LocalModes, "") {
		for _, all := range []bool{false, true} {
			cfg := nftConfig(mode)
			cfg.MasqueradeAll = all
			cfg.NodePodCIDRs = []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24")}
			for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
				fam := map[kernel.Family]nftables.TableFamily{kernel.IPv4: nftables.TableFamilyIPv4, kernel.IPv6: nftables.TableFamilyIPv6}[f]
				chains, err := parseNftTable(fam, proxier.RenderRules(&cfg, f, outFilters))
				if err != nil {
					t.Fatalf("%s masqueradeAll=%v %s: %v", mode, all, f, err)
				}
				var names []string
				for _, c := range chains {
					names = append(names, c.name)
					for i, r := range c.rules {
						switch r.exprs[len(r.exprs)-1].(type) {
						case *expr.Verdict, *expr.Masq, *expr.Reject, *expr.Meta:
						default:
							t.Errorf("%s rule %d ends in %T", c.name, i, r.exprs[len(r.exprs)-1])
						}
					}
				}
				if !slices.Equal(names, proxier.NftChains) {
					t.Errorf("chains %v, want %v", names, proxier.NftChains)
				}
			}
		}
	}
}

// TestCompileNftRefuses: text the renderer never writes is an error, not a rule.
func TestCompileNftRefuses(t *testing.T) {
	for _, line := range []string{
		"ip daddr 1.2.3.4 frobnicate",
		"ip daddr . th dport 10.0.0.1",        // a concatenation compared with a value
		"ip daddr fd00::1 accept",             // IPv6 address in an IPv4 field
		"ct state invalid accept",             // a state we never match
		"fib daddr type unicast accept",       // only local
		"meta mark set meta mark & 0x1",       // only | and ^
		"tcp sport 80 accept",                 // only dport
		`iifname eth0 accept`,                 // names are quoted
		`jump`,                                // no target
		`comment "unterminated`,               // quote
		"meta mark & 0x4000 <= 0x4000 return", // only == and !=
	} {
		if _, err := compileNftRule(nftables.TableFamilyIPv4, line); err == nil {
			t.Errorf("%q compiled", line)
		}
	}
	if _, err := parseNftTable(nftables.TableFamilyIPv4, "table ip x {\n\tchain a {\n\t\ttype nat hook input priority bogus; policy accept;\n\t}\n}\n"); err == nil || !strings.Contains(err.Error(), "priority") {
		t.Errorf("bad priority: %v", err)
	}
}

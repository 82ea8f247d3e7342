package linux

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/proxier/rulescases"
)

var update = flag.Bool("update", false, "rewrite golden files")

// restoreMessages returns the netlink messages Restore sends for chains into an empty
// table of family f: header type and flags, then "%" and the payload in hex, one string
// each.
func restoreMessages(t *testing.T, f kernel.Family, chains []nftChain) []string {
	t.Helper()
	var sent []string
	c, err := nftables.New(nftables.WithTestDial(func(req []netlink.Message) ([]netlink.Message, error) {
		for _, m := range req {
			sent = append(sent, fmt.Sprintf("%d %d %%%x", m.Header.Type, m.Header.Flags, m.Data))
		}
		return req, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	queueRules(c, NewNftables(proxier.NftTable).table(f), nil, chains)
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	return sent
}

// TestEncodeGolden: the netlink messages of a restore of every configuration of
// rulescases, both families (testdata/nft-restore.golden; -update rewrites it). The
// real kernel's reading of them is TestNftablesRulesReal.
func TestEncodeGolden(t *testing.T) {
	const name = "testdata/nft-restore.golden"
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) && os.Getenv("IPVS_PROXIER_TEST_NETNS") != "" {
		t.Skip("the test binary runs without its source tree (the VM tier)")
	}
	var got strings.Builder
	for _, c := range rulescases.Cases(proxier.RulesNftables) {
		for _, f := range rulescases.Families {
			chains, err := encodeNftTable(proxier.Rules(&c.Config, f, c.OutFilters))
			if err != nil {
				t.Fatalf("%s %s: %v", c.Name, f, err)
			}
			got.WriteString("# " + c.Name + " " + f.String() + "\n")
			for _, m := range restoreMessages(t, f, chains) {
				// The header, then a digest of the payload: the file stays small, and a
				// change names the message (a chain or a rule, in order) it is in.
				head, payload, _ := strings.Cut(m, " %")
				sum := sha256.Sum256([]byte(payload))
				fmt.Fprintf(&got, "%s %x\n", head, sum[:8])
			}
		}
	}
	rulescases.Golden(t, name, got.String(), *update)
}

// TestEncodeRefuses: a match nftables has no expression for is an error, never a rule
// that does something else.
func TestEncodeRefuses(t *testing.T) {
	for _, m := range []kernel.Match{kernel.PhysdevIsIn{Not: true}, kernel.IPVSConn{}} {
		rs := &kernel.Ruleset{Family: kernel.IPv4, Table: proxier.NftTable, Chains: []kernel.Chain{{Name: "X", Table: "filter"}},
			Rules: []kernel.Rule{{Table: "filter", Chain: "X", Matches: []kernel.Match{m}, Target: kernel.Target{Kind: kernel.Drop}}}}
		if _, err := encodeNftTable(rs); err == nil {
			t.Errorf("%T encoded", m)
		}
	}
}

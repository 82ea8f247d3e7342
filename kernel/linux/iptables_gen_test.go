package linux

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// TestIptablesSaveGenerationReal: in nft mode a save is answered from the last one while
// the ruleset's generation stands, and any change, to our chain or to a table we do not
// own, makes the next save a real one that sees it.
func TestIptablesSaveGenerationReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	ipt := &Iptables{mode: "nft", chains: map[string]bool{"KUBE-GEN-TEST": true}, saved: map[kernel.Family]savedTables{}}
	if err := ipt.restoreText(kernel.IPv4, "*nat\n:KUBE-GEN-TEST - [0:0]\n-A KUBE-GEN-TEST -j RETURN\nCOMMIT\n"); err != nil {
		t.Fatal(err)
	}
	first, err := ipt.Save(kernel.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	n := ipt.saves
	again, err := ipt.Save(kernel.IPv4)
	if err != nil || again != first || ipt.saves != n {
		t.Fatalf("an unchanged ruleset: saves %d -> %d, text changed %v (%v); want no new iptables-save and the same text", n, ipt.saves, again != first, err)
	}
	g0, err := nftGeneration()
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's edit of our chain: the drift check must see it.
	if out, err := exec.Command("iptables-nft", "-t", "nat", "-A", "KUBE-GEN-TEST", "-p", "tcp", "-j", "RETURN").CombinedOutput(); err != nil {
		t.Fatalf("iptables-nft: %v: %s", err, out)
	}
	if g1, err := nftGeneration(); err != nil || g1 == g0 {
		t.Errorf("generation %d -> %d (%v) across a rule added: want it to move", g0, g1, err)
	}
	drifted, err := ipt.Save(kernel.IPv4)
	if err != nil || ipt.saves != n+1 || !strings.Contains(drifted, "-A KUBE-GEN-TEST -p tcp -j RETURN") {
		t.Fatalf("after a rule was added behind our back: saves %d -> %d (%v), saved:\n%s\nwant one new iptables-save that shows it", n, ipt.saves, err, drifted)
	}
	// A change elsewhere saves again and reads the same text for our chains.
	if out, err := exec.Command("iptables-nft", "-t", "filter", "-N", "SOMEONE-ELSES").CombinedOutput(); err != nil {
		t.Fatalf("iptables-nft: %v: %s", err, out)
	}
	if other, err := ipt.Save(kernel.IPv4); err != nil || other != drifted || ipt.saves != n+2 {
		t.Errorf("after another table changed: saves %d (want %d), text changed %v (%v)", ipt.saves, n+2, other != drifted, err)
	}
}

package linux

import (
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// TestIPSetResizeReal: EnsureSet remakes a hash set made with too small a maxelem with
// the one asked, and one made larger with the smaller one asked once its members fill
// at most half of it, keeping the members and the iptables rule that matches the set;
// a set already as asked is left alone (no scratch set is made).
func TestIPSetResizeReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	s := &IPSets{}
	set := kernel.Set{Name: "RESIZE-HASH", Type: kernel.HashIP, Family: kernel.IPv4, MaxElem: 4, HashSize: 64}
	if err := s.EnsureSet(set); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = exec.Command("iptables-nft", "-D", "INPUT", "-m", "set", "--match-set", "RESIZE-HASH", "src", "-j", "ACCEPT").Run()
		_, _ = DestroySets([]string{"RESIZE-HASH", resizeName})
	}()
	for i := range 3 {
		if err := addEntry("RESIZE-HASH", kernel.SetEntry{IP: netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})}); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("iptables-nft", "-A", "INPUT", "-m", "set", "--match-set", "RESIZE-HASH", "src", "-j", "ACCEPT").CombinedOutput(); err != nil {
		t.Fatalf("iptables: %v: %s", err, out)
	}
	check := func(what string, maxElem uint32) {
		t.Helper()
		h, err := s.setHeader("RESIZE-HASH")
		if err != nil || h.maxElem != maxElem || h.count != 3 {
			t.Errorf("%s: header %+v, %v; want maxelem %d with 3 members", what, h, err, maxElem)
		}
		if out, _ := execOut("ipset", "list", "-n"); strings.Contains(out, resizeName) {
			t.Errorf("%s: the scratch set is left: %s", what, out)
		}
		if out, err := execOut("iptables-nft", "-S", "INPUT"); err != nil || !strings.Contains(out, "--match-set RESIZE-HASH src") {
			t.Errorf("%s: the rule matching the set: %v\n%s", what, err, out)
		}
	}
	set.MaxElem = 65536
	if err := s.EnsureSet(set); err != nil {
		t.Fatal(err)
	}
	check("grown", 65536)
	set.MaxElem = 16 // 3 members fill less than half: remade smaller
	if err := s.EnsureSet(set); err != nil {
		t.Fatal(err)
	}
	check("shrunk", 16)
	set.MaxElem = 4 // 3 members fill more than half of 4: kept at 16
	if err := s.EnsureSet(set); err != nil {
		t.Fatal(err)
	}
	check("kept", 16)
	if out, err := execOut("ipset", "list", "RESIZE-HASH"); err != nil || !strings.Contains(out, "10.0.0.2\n") {
		t.Errorf("members after the resizes: %v\n%s", err, out)
	}
}

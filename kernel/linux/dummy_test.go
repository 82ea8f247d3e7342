package linux

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// TestEnsureDummyRefusesARealInterfaceReal: an existing veth (as eth0 would be) named as
// the dummy device is refused, and its address stays.
func TestEnsureDummyRefusesARealInterfaceReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	for _, args := range [][]string{{"link", "add", "ed0", "type", "veth", "peer", "name", "ed1"}, {"addr", "add", "10.98.0.1/24", "dev", "ed0"}} {
		if out, err := execOut("ip", args...); err != nil {
			t.Fatal(out, err)
		}
	}
	defer func() { _, _ = execOut("ip", "link", "del", "ed0") }()
	err := (&Addresses{}).EnsureDummy("ed0")
	if !errors.Is(err, kernel.ErrNotDummy) || !strings.Contains(err.Error(), "ed0 is a veth interface") {
		t.Fatalf("EnsureDummy(veth): %v, want ErrNotDummy naming the type", err)
	}
	addrs, err := (&Addresses{}).ListAddresses("ed0")
	if err != nil || len(addrs) != 1 || addrs[0] != netip.MustParseAddr("10.98.0.1") {
		t.Errorf("ed0 addresses after the refusal: %v %v", addrs, err)
	}
}

// TestCheckDummyReal: cleanup's check before its first change refuses an existing veth
// (as eth0 would be) and the loopback, and passes a missing device.
func TestCheckDummyReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	if out, err := execOut("ip", "link", "add", "cd0", "type", "veth", "peer", "name", "cd1"); err != nil {
		t.Fatal(out, err)
	}
	defer func() { _, _ = execOut("ip", "link", "del", "cd0") }()
	for _, dev := range []string{"cd0", "lo"} {
		if err := CheckDummy(dev); !errors.Is(err, kernel.ErrNotDummy) {
			t.Errorf("CheckDummy(%s): %v, want ErrNotDummy", dev, err)
		}
	}
	if err := CheckDummy("no-such-dev0"); err != nil {
		t.Errorf("CheckDummy(missing): %v", err)
	}
}

package main

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/sets"
)

// TestCleanupChainSets: --leftovers-only never touches a chain we use, and
// --keep-shared-chains never touches one kube-proxy's iptables mode uses.
func TestCleanupChainSets(t *testing.T) {
	leftovers := chainsMinus(linux.IptablesModeChains, proxier.RuleChains)
	for table, cs := range leftovers {
		for _, c := range cs {
			if slices.Contains(proxier.RuleChains[table], c) {
				t.Errorf("--leftovers-only would remove our %s %s", table, c)
			}
		}
	}
	if !slices.Contains(leftovers["filter"], "KUBE-SERVICES") || slices.Contains(leftovers["nat"], "KUBE-SERVICES") {
		t.Errorf("leftovers %v: the stale filter KUBE-SERVICES must go, our nat KUBE-SERVICES stay", leftovers)
	}
	kept := chainsMinus(proxier.RuleChains, linux.IptablesModeChains)
	for _, shared := range []string{"KUBE-SERVICES", "KUBE-MARK-MASQ", "KUBE-POSTROUTING"} {
		if slices.Contains(kept["nat"], shared) {
			t.Errorf("--keep-shared-chains would remove nat %s", shared)
		}
	}
	if !slices.Contains(kept["filter"], "KUBE-IPVS-FILTER") {
		t.Errorf("--keep-shared-chains keeps our own KUBE-IPVS-FILTER: %v", kept)
	}
	both := chainsIntersect(proxier.RuleChains, linux.IptablesModeChains)
	if !slices.Contains(both["nat"], "KUBE-SERVICES") || slices.Contains(both["filter"], "KUBE-IPVS-FILTER") || slices.Contains(both["filter"], "KUBE-EXTERNAL-SERVICES") {
		t.Errorf("shared chains %v", both)
	}
	all := chainsUnion(proxier.RuleChains, linux.IptablesModeChains)
	if n := len(all["nat"]); n != len(proxier.RuleChains["nat"])+2 { // + KUBE-NODEPORTS, KUBE-PROXY-CANARY
		t.Errorf("union nat %v", all["nat"])
	}
}

// TestCleanupValidatesBeforeChanging: an argument cleanup refuses is refused before its
// first step: nothing is printed, since every step prints what it removed (a
// --dummy-device of lo once deleted the virtual servers on the loopback's addresses,
// the sets and the chains before the device was found to be no dummy). A device that
// exists and is no dummy is refused the same way (TestCleanupValidatesFirst, e2e).
func TestCleanupValidatesBeforeChanging(t *testing.T) {
	for _, args := range [][]string{
		{"--dummy-device", "lo"},
		{"--dummy-device", "lo", "--iptables-mode-leftovers"},
		{"--dummy-device", "lo", "--leftovers-only"},
		{"--dummy-device", "bad/name"},
		{"--ipvs-exclude-cidrs", "10.0.0.0/33"},
		{"--leftovers-only", "--ipvs-exclude-cidrs", "x"},
	} {
		var out bytes.Buffer
		err := runCleanup(args, &out)
		if err == nil || !strings.Contains(err.Error(), "nothing was changed") || out.Len() > 0 {
			t.Errorf("cleanup %v: %v, printed %q", args, err, out.String())
		}
	}
}

// TestCleanupReadsEachBackendsOwnership: cleanup's ownership rule reads the sets of
// every rules backend whose module is loaded, so a NodePort outside the default range
// that the nftables backend's table names is ours on a node without ipsets; the sets of
// a backend whose module is not loaded are never opened (asking would load it).
func TestCleanupReadsEachBackendsOwnership(t *testing.T) {
	nft := kernel.NewFake()
	if err := nft.EnsureSet(kernel.Set{Name: "KUBE-NODE-PORT-TCP", Type: kernel.BitmapPort, Family: kernel.IPv4}); err != nil {
		t.Fatal(err)
	}
	if err := nft.AddEntry("KUBE-NODE-PORT-TCP", kernel.SetEntry{Port: 8080}); err != nil {
		t.Fatal(err)
	}
	rows := []rulesBackend{
		{setsModule: "ip_set", sets: func() kernel.Sets { t.Error("opened the sets of a backend whose module is not loaded"); return nil }},
		{setsModule: "nf_tables", sets: func() kernel.Sets { return nft }},
	}
	named := readOwnership(rows, func(m string) bool { return m == "nf_tables" })
	nodeIP := netip.MustParseAddr("192.168.122.10")
	key := kernel.VSKey{Protocol: kernel.TCP, Address: nodeIP, Port: 8080}
	if !sets.Owns(key, false, []netip.Addr{nodeIP}, nil, 30000, 32767, named) {
		t.Errorf("%v, named in the nftables backend's NodePort set, is not ours", key)
	}
	other := kernel.VSKey{Protocol: kernel.TCP, Address: nodeIP, Port: 8081}
	if sets.Owns(other, false, []netip.Addr{nodeIP}, nil, 30000, 32767, named) {
		t.Errorf("%v, named by no set, is ours", other)
	}
}

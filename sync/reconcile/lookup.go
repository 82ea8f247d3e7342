package reconcile

// A periodic full sync at tens of thousands of virtual servers does not dump them all.
// The kernel answers a dump in skbs of at most 32 KiB and walks its service table from
// the first entry for each (ip_vs_genl_dump_services skips cb->args[0] entries), so a
// dump of N virtual servers costs O(N²): 1.2 s at 45,000 in the emulated VM on its own
// (`make bench-kernel`, bench/results/kernel.md), 2.4-2.9 s of a 3.6 s periodic full
// sync in the daemon at 30,000 Services. Past dumpAllUpTo virtual servers, a full sync
// dumps them all only on the heavy round (heavyDue: CheckEvery full syncs after the
// last, with the set listing), when the desired state was rebuilt (which makes it one),
// or after a failed dump; in between it looks up by key
// (IPVS_CMD_GET_SERVICE, a hash lookup each) the virtual servers whose real servers
// it reads this round, the rotation's share (ipvs.RotationPeriod: at most ~500). A
// lookup that finds one of ours missing makes that full sync dump them all, so a mass
// deletion (`ipvsadm -C`) is still repaired within syncPeriod; a single virtual server
// deleted or changed by hand (`ipvsadm -D`, `-E`), or a stranger on our addresses,
// within CheckEvery full syncs, as hand-made drift of real servers and set members
// already is.

// dumpAllUpTo is the number of cached virtual servers up to which every full sync dumps
// them all: at 10,000 the dump costs the VM about what a lookup of a tenth does
// (0.06 s against 0.08 s, from the 45,000 numbers above).
const dumpAllUpTo = 10000

// dumpAllDue reports whether this full sync dumps every virtual server (see above): on
// the heavy round (s.heavy, set by syncFull: heavyDue, or the desired state rebuilt),
// after a failed dump, or at most dumpAllUpTo of them.
func (s *Syncer) dumpAllDue() bool {
	return s.heavy || s.dumpFailed || s.ipvs.Len() <= s.dumpAllUpTo
}

// lookupState is whether full syncs dump or look up.
type lookupState struct {
	// dumpAllUpTo is dumpAllUpTo (above); tests lower it. dumpedAll and dumpedAddrs say
	// whether the last full sync dumped every virtual server and the addresses, for its
	// log line.
	dumpAllUpTo            int
	dumpedAll, dumpedAddrs bool
	// listUncountedUpTo is listUncountedUpTo (sets.go); tests lower it.
	listUncountedUpTo int
}

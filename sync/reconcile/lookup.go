package reconcile

import (
	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// A periodic full sync at tens of thousands of virtual servers does not dump them all.
// The kernel answers a dump in skbs of at most 32 KiB and walks its service table from
// the first entry for each (ip_vs_genl_dump_services skips cb->args[0] entries), so a
// dump of N virtual servers costs O(N²): 1.2 s at 45,000 in the emulated VM on its own
// (`make bench-kernel`, bench/results/kernel.md), 2.4-2.9 s of a 3.6 s periodic full
// sync in the daemon at 30,000 Services. Past dumpAllUpTo virtual servers, a full sync
// dumps them all only on each CheckEvery-th round (with the set listing), when the
// desired state was rebuilt, or after a failed dump; in between it looks up by key
// (IPVS_CMD_GET_SERVICE, a hash lookup each) the virtual servers whose real servers
// it reads this round, the same rotating 1/CheckEvery (at most ~realServerReads). A
// lookup that finds one of ours missing makes that full sync dump them all, so a mass
// deletion (`ipvsadm -C`) is still repaired within syncPeriod; a single virtual server
// deleted or changed by hand (`ipvsadm -D`, `-E`), or a stranger on our addresses,
// within CheckEvery full syncs, as hand-made drift of real servers and set members
// already is.

// dumpAllUpTo is the number of cached virtual servers up to which every full sync dumps
// them all: at 10,000 the dump costs the VM about what a lookup of a tenth does
// (0.06 s against 0.08 s, from the 45,000 numbers above).
const dumpAllUpTo = 10000

// dumpAllDue reports whether this full sync dumps every virtual server (see above):
// listAll is set when the desired state was rebuilt (the first full sync, a changed
// node).
func (s *Syncer) dumpAllDue(listAll bool) bool {
	every := max(s.opts.CheckEvery, 1)
	return listAll || s.dumpFailed || len(s.vs) <= s.dumpAllUpTo || (s.fullRound+1)%every == 0
}

// lookupKeys lists the cached virtual servers whose real servers this full sync reads
// (checkRealServers), to be looked up instead of dumped. Called with s.mu held.
func (s *Syncer) lookupKeys() []kernel.VSKey {
	var keys []kernel.VSKey
	for key := range s.vs {
		if _, read := s.checkRealServers(key); read {
			keys = append(keys, key)
		}
	}
	return keys
}

// lookedUp makes a dump of our virtual servers from the cache and the lookups of keys
// (found): what a full sync that does not dump compares and reads. It reports how many
// of keys the kernel no longer has and no sync wrote during the lookups: drift that the
// caller repairs with a dump of everything. Called with s.mu held.
func (s *Syncer) lookedUp(keys []kernel.VSKey, found []kernel.DumpedVS) (vss []kernel.DumpedVS, missing int) {
	checked := make(map[kernel.VSKey]struct{}, len(keys))
	vss = make([]kernel.DumpedVS, 0, len(s.vs))
	for i, key := range keys {
		checked[key] = struct{}{}
		switch {
		case found[i].Address.IsValid():
			vss = append(vss, found[i])
		case s.vs[key] != nil && !s.touched.hasVS(key):
			missing++
		}
	}
	for key, p := range s.vs {
		if _, ok := checked[key]; !ok {
			vss = append(vss, kernel.DumpedVS{VirtualServer: p.vs, Stats: p.stats})
		}
	}
	return vss, missing
}

package ipvs

import (
	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// A full sync reads the kernel with the syncer's lock released (the syncer's read.go):
// the virtual servers dumped or looked up (LookupKeys, LookedUp), then the real servers
// due (RealServersToRead, ReadRealServers); RefreshCache then merges what it read into
// the cache, under the lock. What syncs wrote meanwhile is recorded (Record, EndRecord)
// and keeps its cached state.

// LookupKeys lists the cached virtual servers whose real servers full sync round reads
// (checkRealServers), to be looked up instead of dumped.
func (r *Reconciler) LookupKeys(round int) []kernel.VSKey {
	var keys []kernel.VSKey
	for key := range r.vs.Keys() {
		if _, read := r.checkRealServers(key, round); read {
			keys = append(keys, key)
		}
	}
	return keys
}

// LookedUp returns the virtual servers the lookups of keys found (found holds a zero
// entry for each one not found), in keys' order, and how many of keys the kernel no
// longer has and no sync wrote during the lookups: drift that the caller repairs with a
// dump of everything. The cache keeps the rest as they were (RefreshCache): a copy of
// every cached virtual server per full sync was 12 MB of garbage at 100,000 Services.
func (r *Reconciler) LookedUp(keys []kernel.VSKey, found []kernel.DumpedVS) (vss []kernel.DumpedVS, missing int) {
	vss = found[:0]
	for i, key := range keys {
		switch {
		case found[i].Address.IsValid():
			vss = append(vss, found[i])
		case r.vs.Get(key) != nil && !r.touched.Has(key):
			missing++
		}
	}
	return vss, missing
}

// RSRead is the outcome of reading the real servers of the dumped virtual server i.
type RSRead struct {
	i   int
	rss []kernel.RealServer
	err error
}

// RealServersToRead lists, in dump order, the dumped virtual servers whose real servers
// full sync round reads (checkRealServers): only those, so a periodic full sync at
// 30,000 Services holds ~500 entries (RealServerReads), not one per virtual server.
func (r *Reconciler) RealServersToRead(vss []kernel.DumpedVS, round int) []RSRead {
	var reads []RSRead
	for i, vs := range vss {
		if ours, read := r.checkRealServers(vs.VSKey, round); ours && read {
			reads = append(reads, RSRead{i: i})
		}
	}
	return reads
}

// ReadRealServers reads the real servers of the virtual servers listed in reads. It
// touches only the kernel, so the syncer calls it with its lock released.
func (r *Reconciler) ReadRealServers(vss []kernel.DumpedVS, reads []RSRead) {
	for j := range reads {
		reads[j].rss, reads[j].err = r.cfg.IPVS.ListRealServers(vss[reads[j].i].VSKey)
	}
}

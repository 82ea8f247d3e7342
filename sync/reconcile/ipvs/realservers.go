package ipvs

import (
	"net/netip"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// realServers are the real servers programmed for one virtual server, sorted by address
// and port. A sorted slice, not a map: nearly every virtual server has a handful, and a
// map each cost ~760 bytes against ~230 for four in a slice (BenchmarkRetainedHeap30k).
// Lookups are binary searches, so a virtual server with thousands stays cheap.
type realServers []cachedRS

// cachedRS is a real server as the cache keeps it: 24 bytes without a pointer, against
// 56 with one for a kernel.RealServer, whose connection counts the cache never reads
// (180,000 of them at 30,000 Services x 4 endpoints, and the GC scans none now).
type cachedRS struct {
	addr   [16]byte
	port   uint16
	is4    bool
	weight int32
}

func toCached(rs kernel.RealServer) cachedRS {
	return cachedRS{addr: rs.Address.As16(), port: rs.Port, is4: rs.Address.Is4(), weight: int32(rs.Weight)}
}

func (c cachedRS) addrPort() netip.AddrPort {
	a := netip.AddrFrom16(c.addr)
	if c.is4 {
		a = a.Unmap()
	}
	return netip.AddrPortFrom(a, c.port)
}

// realServer returns c as written (no connection counts).
func (c cachedRS) realServer() kernel.RealServer {
	ap := c.addrPort()
	return kernel.RealServer{Address: ap.Addr(), Port: ap.Port(), Weight: c.weight}
}

func compareRS(a cachedRS, ap netip.AddrPort) int { return a.addrPort().Compare(ap) }

// newRealServers returns rss sorted, as a realServers.
func newRealServers(rss []kernel.RealServer) realServers {
	out := make(realServers, len(rss))
	for i, rs := range rss {
		out[i] = toCached(rs)
	}
	slices.SortFunc(out, func(a, b cachedRS) int { return a.addrPort().Compare(b.addrPort()) })
	return out
}

// get returns the real server at ap.
func (r realServers) get(ap netip.AddrPort) (kernel.RealServer, bool) {
	if i, ok := slices.BinarySearchFunc(r, ap, compareRS); ok {
		return r[i].realServer(), true
	}
	return kernel.RealServer{}, false
}

// put adds or replaces rs. Appending in order (as the translator's sorted real servers
// come) costs no copying.
func (r *realServers) put(rs kernel.RealServer) {
	c, ap := toCached(rs), rs.AddrPort()
	if n := len(*r); n == 0 || (*r)[n-1].addrPort().Compare(ap) < 0 {
		*r = append(*r, c)
		return
	}
	i, ok := slices.BinarySearchFunc(*r, ap, compareRS)
	if ok {
		(*r)[i] = c
		return
	}
	*r = slices.Insert(*r, i, c)
}

// del removes the real server at ap, if any.
func (r *realServers) del(ap netip.AddrPort) {
	if i, ok := slices.BinarySearchFunc(*r, ap, compareRS); ok {
		*r = slices.Delete(*r, i, i+1)
	}
}

func (p *programmedVS) hasRS(ap netip.AddrPort) bool {
	_, ok := p.rss.get(ap)
	return ok
}

// cache is what we believe the kernel holds of our virtual servers. It keeps the number
// of their real servers (rsTotal) as it changes them, through the four methods below, so
// that the snapshot published after every sync costs nothing per virtual server:
// summing them took ~0.5 ms at 30,000 Services, 50 times the rest of a one-endpoint
// change (BenchmarkEndpointChange30k). The tests check it against CountRealServers after
// every sync.
type cache struct {
	vs      kernel.VSMap[*programmedVS]
	rsTotal int
	// cameOrWent is set when a virtual server was cached or forgotten since the counters
	// were last refreshed (stats.go).
	cameOrWent bool
	// touched records what syncs write while a full sync reads; nil otherwise.
	touched Touched
}

// Len is the number of virtual servers cached: ours in the kernel.
func (c *cache) Len() int { return c.vs.Len() }

// RealServerCount is the number of real servers cached.
func (c *cache) RealServerCount() int { return c.rsTotal }

// setVS caches p as the virtual server at key.
func (c *cache) setVS(key kernel.VSKey, p *programmedVS) {
	c.touchVS(key)
	c.cameOrWent = true
	if old := c.vs.Get(key); old != nil {
		c.rsTotal -= len(old.rss)
	}
	c.vs.Set(key, p)
	c.rsTotal += len(p.rss)
}

// dropVS forgets the virtual server at key.
func (c *cache) dropVS(key kernel.VSKey) {
	c.touchVS(key)
	c.cameOrWent = true
	if p := c.vs.Get(key); p != nil {
		c.rsTotal -= len(p.rss)
		c.vs.Delete(key)
	}
}

// putRS adds or replaces a real server of p, a cached virtual server.
func (c *cache) putRS(p *programmedVS, rs kernel.RealServer) {
	n := len(p.rss)
	p.rss.put(rs)
	c.rsTotal += len(p.rss) - n
}

// delRS removes the real server at ap from p, a cached virtual server (nil: none).
func (c *cache) delRS(p *programmedVS, ap netip.AddrPort) {
	if p == nil {
		return
	}
	n := len(p.rss)
	p.rss.del(ap)
	c.rsTotal += len(p.rss) - n
}

// CountRealServers counts the cached real servers, one virtual server at a time: what
// RealServerCount must equal.
func (c *cache) CountRealServers() int {
	n := 0
	for _, p := range c.vs.All() {
		n += len(p.rss)
	}
	return n
}

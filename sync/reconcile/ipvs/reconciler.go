// Package ipvs is the writer's reconciler of IPVS virtual and real servers: the cache
// of what was programmed, its refresh from a full sync's dump or lookups, which real
// servers a full sync reads and compares, the batched writes, the real servers draining
// at weight 0, and the counters published for /metrics and /status. The syncer
// (sync/reconcile) holds its lock, decides when each step runs and calls them in order.
package ipvs

import (
	"net/netip"
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Config is what the reconciler needs of the syncer: the kernel, the settings, and the
// syncer's state it reads (the desired state, the ownership rule) or reports to (a
// failed write, a lock released).
type Config struct {
	IPVS kernel.IPVS
	// Conntrack clears a UDP real server's flows when it goes; nil clears none.
	Conntrack kernel.Conntrack
	Log       *zap.Logger
	Now       func() time.Time
	// GracefulTimeout bounds how long a removed TCP/SCTP real server drains at weight 0.
	GracefulTimeout time.Duration
	// CheckEvery spreads the real-server reads over full syncs (checks.go).
	CheckEvery int
	// VSSeriesLimit is how many of the busiest virtual servers Stats keeps (stats.go).
	VSSeriesLimit int
	// Desired returns the desired state in force.
	Desired func() *proxier.Desired
	// Owns reports whether a virtual server found in the kernel, that no Service wants
	// and the cache does not hold, is ours to prune.
	Owns func(kernel.VSKey) bool
	// Failed is told of a failed write to the virtual server key (kind "virtual_server")
	// or to one of its real servers ("real_server"), which it queues for retry. It
	// reports whether the kernel refused it for what it carries (kernel.ErrRefused):
	// such a failure is left out of the sync's error.
	Failed func(kind string, key kernel.VSKey, err error) (refused bool)
	// Yield releases the syncer's lock and takes it again, between chunks of a full
	// sync's writes (ApplyAll), so that a partial sync waiting for it goes first.
	Yield func()
}

// Reconciler keeps the virtual and real servers we programmed and writes the
// differences from the desired state. It is not safe for concurrent use: the syncer
// calls it with its lock held, except where a method says otherwise.
type Reconciler struct {
	cfg Config
	// cache is what we programmed (realservers.go), counters what we read of it
	// (stats.go): each a type of its own with its methods.
	cache
	counters counters
	// rsQueue holds the real-server writes of the current apply, sent as one batch.
	rsQueue []queuedRS
	// drain holds the real servers draining at weight 0, and until when.
	drain map[drainKey]time.Time
}

// New returns an empty reconciler.
func New(cfg Config) *Reconciler {
	return &Reconciler{cfg: cfg, drain: map[drainKey]time.Time{}}
}

// programmedVS is what we believe the kernel holds for one virtual server.
type programmedVS struct {
	// settings are the kernel's, with only the flags we own (VSSettings.Own).
	settings kernel.VSSettings
	rss      realServers
	// stats are its counters as last read (a dump or a lookup), for the snapshot.
	stats kernel.VSStats
	// seen is the full-sync round that last found it in the kernel; read the one that
	// last read its real servers from it.
	seen, read int32
}

type drainKey struct {
	vs   kernel.VSKey
	dest netip.AddrPort
}

// SetCheckEvery changes how the real-server reads are spread over full syncs
// (Config.CheckEvery).
func (r *Reconciler) SetCheckEvery(n int) { r.cfg.CheckEvery = n }

// Draining is the number of real servers draining at weight 0.
func (r *Reconciler) Draining() int { return len(r.drain) }

// Touched names the virtual servers syncs wrote while a full sync read the kernel.
type Touched map[kernel.VSKey]struct{}

// Has reports whether k was written.
func (t Touched) Has(k kernel.VSKey) bool {
	_, ok := t[k]
	return ok
}

// Record starts recording the virtual servers written (if not already), for a full
// sync that reads the kernel with the syncer's lock released.
func (c *cache) Record() {
	if c.touched == nil {
		c.touched = Touched{}
	}
}

// EndRecord stops recording and returns what was written since Record (empty if not
// recording).
func (c *cache) EndRecord() Touched {
	t := c.touched
	c.touched = nil
	return t
}

// touchVS records a cache change of the virtual server k (or of its real servers)
// while a full sync reads the kernel.
func (c *cache) touchVS(k kernel.VSKey) {
	if c.touched != nil {
		c.touched[k] = struct{}{}
	}
}

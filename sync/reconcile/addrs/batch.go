package addrs

import (
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// BackgroundAddresses is the number of queued address writes from which a full sync
// sends them in the background (Start).
const BackgroundAddresses = 1000

// Batch is a batch of address writes a full sync sends while it writes the sets
// and the virtual servers.
type Batch struct {
	ops  []kernel.AddressOp
	errs []error
	took time.Duration
	done chan struct{}
}

// Start sends the queued address writes in the background when they are many, so
// that they overlap the set and virtual-server writes (other kernel locks: the ipset and
// IPVS mutexes, not RTNL), and returns the batch to finish; nil when it left them queued
// for Flush. Binding is slow in the kernel: each bind walks the device's whole address
// list (__inet_insert_ifa, net/ipv4/devinet.c), so a cold start that binds 30,000
// ClusterIPs spent 51 s of its 92 in them after the sets (7.6 s) and the virtual servers
// (14.1 s) in the emulated VM (`make bench-scale`). The write lock is held until the
// batch is sent: a partial sync's address writes (Flush) wait for it, so they land after
// it, in the order their decisions were made.
//
// It never waits for the write lock with the syncer's lock held (a partial sync waiting
// for that may hold it): if another write holds it, the queue is left to Flush.
func (r *Reconciler) Start() *Batch {
	if len(r.queue) < BackgroundAddresses || !r.write.TryLock() {
		return nil
	}
	b := &Batch{ops: r.queue, done: make(chan struct{})}
	r.queue = nil
	dev, begun := r.cfg.Device(), r.cfg.Now()
	go func() {
		defer close(b.done)
		defer r.write.Unlock()
		b.errs = r.cfg.Addresses.WriteAddresses(dev, b.ops)
		b.took = r.cfg.Now().Sub(begun)
	}()
	return b
}

// Finish waits for b (nil: nothing) with the syncer's lock released, so partial syncs
// run meanwhile, and handles its failures as Flush does.
func (r *Reconciler) Finish(b *Batch, errs *[]error) {
	if b == nil {
		return
	}
	r.cfg.Wait(b.done)
	r.failed(b.ops, b.errs, errs)
	r.cfg.Log.Info("Addresses written alongside the sets and virtual servers", zap.Int("writes", len(b.ops)), zap.Duration("took", b.took))
}

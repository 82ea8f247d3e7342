package reconcile

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// backgroundAddresses is the number of queued address writes from which a full sync
// sends them in the background (startAddresses).
const backgroundAddresses = 1000

// addressBatch is a batch of address writes a full sync sends while it writes the sets
// and the virtual servers.
type addressBatch struct {
	ops  []kernel.AddressOp
	errs []error
	took time.Duration
	done chan struct{}
}

// startAddresses sends the queued address writes in the background when they are many,
// so that they overlap the set and virtual-server writes (other kernel locks: the
// ipset and IPVS mutexes, not RTNL), and returns the batch to finish; nil when it left
// them queued for flushAddresses. Binding is slow in the kernel: each bind walks the
// device's whole address list (__inet_insert_ifa, net/ipv4/devinet.c), so a cold start
// that binds 30,000 ClusterIPs spent 51 s of its 92 in them after the sets (7.6 s)
// and the virtual servers (14.1 s) in the emulated VM (`make bench-scale`,
// `make bench-scale`). s.addrWrite is held until the batch is
// sent: a partial sync's address writes (flushAddresses) wait for it, so they land
// after it, in the order their decisions were made.
//
// It never waits for s.addrWrite with s.mu held (a partial sync waiting for s.mu may
// hold it): if another write holds it, the queue is left to flushAddresses.
func (s *Syncer) startAddresses() *addressBatch {
	if len(s.addrQueue) < backgroundAddresses || !s.addrWrite.TryLock() {
		return nil
	}
	b := &addressBatch{ops: s.addrQueue, done: make(chan struct{})}
	s.addrQueue = nil
	dev, begun := s.cfg.DummyDevice, s.opts.Now()
	go func() {
		defer close(b.done)
		defer s.addrWrite.Unlock()
		b.errs = s.k.Addresses.WriteAddresses(dev, b.ops)
		b.took = s.opts.Now().Sub(begun)
	}()
	return b
}

// waitReleased waits for done, with s.mu released if it is not closed yet. Called with
// s.mu held; returns with it held.
func (s *Syncer) waitReleased(done <-chan struct{}) {
	select {
	case <-done:
	default:
		s.mu.Unlock()
		<-done
		s.mu.Lock()
	}
}

// lockReleased locks m, a write lock a full sync's background batch holds while it is
// sent (addrWrite, memberWrite): if the batch holds it, it waits with s.mu released, so
// that the full sync goes on meanwhile, after calling onWait (tests; nil: none). Called
// with s.mu held; returns with it held.
func (s *Syncer) lockReleased(m *sync.Mutex, onWait func()) {
	if m.TryLock() {
		return
	}
	s.mu.Unlock()
	if onWait != nil {
		onWait()
	}
	m.Lock()
	s.mu.Lock()
}

// finishAddresses waits for b (nil: nothing) with s.mu released, so partial syncs run
// meanwhile, and handles its failures as flushAddresses does.
func (s *Syncer) finishAddresses(b *addressBatch, errs *[]error) {
	if b == nil {
		return
	}
	s.waitReleased(b.done)
	s.addressesFailed(b.ops, b.errs, errs)
	s.log.Info("Addresses written alongside the sets and virtual servers", zap.Int("writes", len(b.ops)), zap.Duration("took", b.took))
}

package reconcile

import (
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// backgroundMembers is the number of set-member writes of a full sync's set repair from
// which they are sent in the background (startMembers). A variable for tests.
var backgroundMembers = 10000

// memberBatch is a batch of set-member writes a full sync sends while it writes the
// virtual servers.
type memberBatch struct {
	ops  []kernel.SetOp
	errs []error
	took time.Duration
	done chan struct{}
}

// startMembers sends ops in the background when they are many, so that they overlap the
// virtual-server writes that follow (ipset and IPVS take their own kernel mutexes, and
// the emulated VM has two CPUs), and returns the batch to finish; with few, it writes
// them at once and returns nil. A cold start writes every member of every set: 228,004
// at 30,000 Services, the "sets" step of the first sync, which the IPVS step then waited
// for (the first sync's phases in bench/results/results.md).
//
// s.memberWrite is held until the batch is sent, so a partial sync's member writes
// (writeMembers) land after it, in the order their decisions were made. Called with
// s.mu held; the batch itself never takes s.mu.
func (s *Syncer) startMembers(ops []kernel.SetOp) (*memberBatch, error) {
	if len(ops) < backgroundMembers {
		return nil, s.writeMembers(ops)
	}
	s.memberWrite.Lock() // s.mu is held: no partial sync holds it
	s.growSets(ops)
	b := &memberBatch{ops: ops, done: make(chan struct{})}
	begun := s.opts.Now()
	go func() {
		defer close(b.done)
		defer s.memberWrite.Unlock()
		b.errs = s.k.IPSets.WriteEntries(b.ops)
		b.took = s.opts.Now().Sub(begun)
	}()
	return b, nil
}

// finishMembers waits for b (nil: nothing) with s.mu released, so partial syncs run
// meanwhile, and queues its failed writes for retry as writeMembers does.
func (s *Syncer) finishMembers(b *memberBatch, errs *[]error) {
	if b == nil {
		return
	}
	select {
	case <-b.done:
	default:
		s.mu.Unlock()
		<-b.done
		s.mu.Lock()
	}
	*errs = append(*errs, s.membersFailed(b.ops, b.errs))
	s.log.Info("Set members written alongside the virtual servers", zap.Int("writes", len(b.ops)), zap.Duration("took", b.took))
}

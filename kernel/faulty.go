package kernel

import (
	"fmt"
	"math/rand/v2"
	"sync"
)

// Faulty wraps a Kernel and makes a fraction of its operations fail with ErrInjected
// before they reach the inner backend. The failures come from a seeded generator, so a
// test run is repeatable. It is safe for concurrent use.
type Faulty struct {
	inner Kernel
	mu    sync.Mutex
	rng   *rand.Rand
	rate  float64
	// Injected counts the failures made so far; Refused the writes refused (RefuseWhere).
	Injected, Refused int
	refuse            func(op any) bool
}

// NewFaulty wraps k; rate is the probability (0..1) that any one operation fails.
func NewFaulty(k Kernel, rate float64, seed uint64) *Faulty {
	return &Faulty{inner: k, rate: rate, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// SetRate changes the failure probability; 0 turns faults off.
func (f *Faulty) SetRate(rate float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rate = rate
}

// RefuseWhere makes every later write for which refuse returns true fail as the kernel
// refusing it (ErrRefused), each time it is tried, as a kernel refuses an element
// overlapping another; nil refuses none. refuse gets the write itself (a SetOp,
// VirtualServerOp, RealServerOp or AddressOp).
func (f *Faulty) RefuseWhere(refuse func(op any) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = refuse
}

// Kernel returns the wrapper as a Kernel bundle.
func (f *Faulty) Kernel() Kernel { return Wrap(f.inner, Hooks{Before: f.fail, Write: f.refused}) }

func (f *Faulty) refused(op any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse == nil || !f.refuse(op) {
		return nil
	}
	f.Refused++
	return fmt.Errorf("%v: %w: %w", op, ErrRefused, ErrInjected)
}

func (f *Faulty) fail(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rate > 0 && f.rng.Float64() < f.rate {
		f.Injected++
		return fmt.Errorf("%s: %w", op, ErrInjected)
	}
	return nil
}

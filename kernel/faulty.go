package kernel

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
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
	// Injected counts the failures made so far.
	Injected int
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

// Kernel returns the wrapper as a Kernel bundle.
func (f *Faulty) Kernel() Kernel {
	return Kernel{IPVS: faultyIPVS{f}, Addresses: faultyAddrs{f}, IPSets: faultySets{f}, Iptables: faultyIptables{f}, Conntrack: faultyConntrack{f}}
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

type faultyIPVS struct{ f *Faulty }

func (w faultyIPVS) ListVirtualServers() ([]VirtualServer, error) {
	if err := w.f.fail("ListVirtualServers"); err != nil {
		return nil, err
	}
	return w.f.inner.IPVS.ListVirtualServers()
}
func (w faultyIPVS) AddVirtualServer(vs VirtualServer) error {
	if err := w.f.fail("AddVirtualServer"); err != nil {
		return err
	}
	return w.f.inner.IPVS.AddVirtualServer(vs)
}
func (w faultyIPVS) UpdateVirtualServer(vs VirtualServer) error {
	if err := w.f.fail("UpdateVirtualServer"); err != nil {
		return err
	}
	return w.f.inner.IPVS.UpdateVirtualServer(vs)
}
func (w faultyIPVS) DeleteVirtualServer(k VSKey) error {
	if err := w.f.fail("DeleteVirtualServer"); err != nil {
		return err
	}
	return w.f.inner.IPVS.DeleteVirtualServer(k)
}
func (w faultyIPVS) ListRealServers(k VSKey) ([]RealServer, error) {
	if err := w.f.fail("ListRealServers"); err != nil {
		return nil, err
	}
	return w.f.inner.IPVS.ListRealServers(k)
}
func (w faultyIPVS) AddRealServer(k VSKey, rs RealServer) error {
	if err := w.f.fail("AddRealServer"); err != nil {
		return err
	}
	return w.f.inner.IPVS.AddRealServer(k, rs)
}
func (w faultyIPVS) UpdateRealServer(k VSKey, rs RealServer) error {
	if err := w.f.fail("UpdateRealServer"); err != nil {
		return err
	}
	return w.f.inner.IPVS.UpdateRealServer(k, rs)
}
func (w faultyIPVS) DeleteRealServer(k VSKey, rs RealServer) error {
	if err := w.f.fail("DeleteRealServer"); err != nil {
		return err
	}
	return w.f.inner.IPVS.DeleteRealServer(k, rs)
}

type faultyAddrs struct{ f *Faulty }

func (w faultyAddrs) EnsureDummy(dev string) error {
	if err := w.f.fail("EnsureDummy"); err != nil {
		return err
	}
	return w.f.inner.Addresses.EnsureDummy(dev)
}
func (w faultyAddrs) ListAddresses(dev string) ([]netip.Addr, error) {
	if err := w.f.fail("ListAddresses"); err != nil {
		return nil, err
	}
	return w.f.inner.Addresses.ListAddresses(dev)
}
func (w faultyAddrs) BindAddress(dev string, a netip.Addr) error {
	if err := w.f.fail("BindAddress"); err != nil {
		return err
	}
	return w.f.inner.Addresses.BindAddress(dev, a)
}
func (w faultyAddrs) UnbindAddress(dev string, a netip.Addr) error {
	if err := w.f.fail("UnbindAddress"); err != nil {
		return err
	}
	return w.f.inner.Addresses.UnbindAddress(dev, a)
}

type faultySets struct{ f *Faulty }

func (w faultySets) EnsureSet(s Set) error {
	if err := w.f.fail("EnsureSet"); err != nil {
		return err
	}
	return w.f.inner.IPSets.EnsureSet(s)
}
func (w faultySets) ListEntries(set string) ([]SetEntry, error) {
	if err := w.f.fail("ListEntries"); err != nil {
		return nil, err
	}
	return w.f.inner.IPSets.ListEntries(set)
}
func (w faultySets) AddEntry(set string, e SetEntry) error {
	if err := w.f.fail("AddEntry"); err != nil {
		return err
	}
	return w.f.inner.IPSets.AddEntry(set, e)
}
func (w faultySets) DelEntry(set string, e SetEntry) error {
	if err := w.f.fail("DelEntry"); err != nil {
		return err
	}
	return w.f.inner.IPSets.DelEntry(set, e)
}

type faultyIptables struct{ f *Faulty }

func (w faultyIptables) Restore(fam Family, rules string) error {
	if err := w.f.fail("Restore"); err != nil {
		return err
	}
	return w.f.inner.Iptables.Restore(fam, rules)
}
func (w faultyIptables) Save(fam Family) (string, error) {
	if err := w.f.fail("Save"); err != nil {
		return "", err
	}
	return w.f.inner.Iptables.Save(fam)
}

type faultyConntrack struct{ f *Faulty }

func (w faultyConntrack) ClearUDP(vip, ep netip.AddrPort) error {
	if err := w.f.fail("ClearUDP"); err != nil {
		return err
	}
	return w.f.inner.Conntrack.ClearUDP(vip, ep)
}
func (w faultyConntrack) Stats() (ConntrackStats, error) {
	if err := w.f.fail("Stats"); err != nil {
		return ConntrackStats{}, err
	}
	return w.f.inner.Conntrack.Stats()
}

package kernel

import "net/netip"

// Hooks intercept every operation of a wrapped Kernel. Both are optional.
type Hooks struct {
	// Before runs first; a non-nil error fails the operation without reaching the kernel.
	Before func(op string) error
	// After sees the outcome of every operation that reached the kernel.
	After func(op string, err error)
	// Write runs for each write of a batch with the write itself (a SetOp,
	// VirtualServerOp, RealServerOp or AddressOp), after Before; a non-nil error fails
	// that write alone without reaching the kernel.
	Write func(op any) error
}

// Wrap returns k with every operation passed through h. The fault injector and the
// error metrics are both built on it, so neither repeats the interface.
func Wrap(k Kernel, h Hooks) Kernel {
	w := &wrapped{inner: k, h: h}
	return Kernel{IPVS: wrappedIPVS{w}, Addresses: wrappedAddrs{w}, Sets: wrappedSets{w}, Rules: wrappedRules{w}, Conntrack: wrappedConntrack{w}}
}

type wrapped struct {
	inner Kernel
	h     Hooks
}

// call runs fn under the hooks.
func (w *wrapped) call(op string, fn func() error) error {
	if w.h.Before != nil {
		if err := w.h.Before(op); err != nil {
			return err
		}
	}
	err := fn()
	if w.h.After != nil {
		w.h.After(op, err)
	}
	return err
}

// call1 runs fn, which also returns a value, under the hooks.
func call1[T any](w *wrapped, op string, fn func() (T, error)) (T, error) {
	var out T
	err := w.call(op, func() (err error) { out, err = fn(); return err })
	return out, err
}

type wrappedIPVS struct{ w *wrapped }

func (x wrappedIPVS) ListVirtualServers() ([]DumpedVS, error) {
	return call1(x.w, "ListVirtualServers", x.w.inner.IPVS.ListVirtualServers)
}
func (x wrappedIPVS) LookupVirtualServers(keys []VSKey) ([]DumpedVS, error) {
	return call1(x.w, "LookupVirtualServers", func() ([]DumpedVS, error) { return x.w.inner.IPVS.LookupVirtualServers(keys) })
}
func (x wrappedIPVS) ListRealServers(k VSKey) ([]RealServer, error) {
	return call1(x.w, "ListRealServers", func() ([]RealServer, error) { return x.w.inner.IPVS.ListRealServers(k) })
}

// WriteVirtualServers passes each op through the hooks as the operation it stands for.
func (x wrappedIPVS) WriteVirtualServers(ops []VirtualServerOp) []error {
	return hookBatch(x.w, ops, VirtualServerOp.Name, x.w.inner.IPVS.WriteVirtualServers)
}

// WriteRealServers passes each op through the hooks as the operation it stands for, as
// WriteEntries does.
func (x wrappedIPVS) WriteRealServers(ops []RealServerOp) []error {
	return hookBatch(x.w, ops, RealServerOp.Name, x.w.inner.IPVS.WriteRealServers)
}

type wrappedAddrs struct{ w *wrapped }

func (x wrappedAddrs) EnsureDummy(dev string) error {
	return x.w.call("EnsureDummy", func() error { return x.w.inner.Addresses.EnsureDummy(dev) })
}
func (x wrappedAddrs) ListAddresses(dev string) ([]netip.Addr, error) {
	return call1(x.w, "ListAddresses", func() ([]netip.Addr, error) { return x.w.inner.Addresses.ListAddresses(dev) })
}

// WriteAddresses passes each op through the hooks as the operation it stands for.
func (x wrappedAddrs) WriteAddresses(dev string, ops []AddressOp) []error {
	return hookBatch(x.w, ops, AddressOp.Name, func(ops []AddressOp) []error { return x.w.inner.Addresses.WriteAddresses(dev, ops) })
}

type wrappedSets struct{ w *wrapped }

func (x wrappedSets) EnsureSet(s Set) error {
	return x.w.call("EnsureSet", func() error { return x.w.inner.Sets.EnsureSet(s) })
}
func (x wrappedSets) ListEntries(set string) ([]SetEntry, error) {
	return call1(x.w, "ListEntries", func() ([]SetEntry, error) { return x.w.inner.Sets.ListEntries(set) })
}
func (x wrappedSets) EachEntry(set string, restart func(), each func(SetEntry)) error {
	return x.w.call("ListEntries", func() error { return x.w.inner.Sets.EachEntry(set, restart, each) })
}
func (x wrappedSets) CountEntries(set string) (int, error) {
	return call1(x.w, "CountEntries", func() (int, error) { return x.w.inner.Sets.CountEntries(set) })
}

// WriteEntries passes each op through the hooks as the single-entry operation it
// stands for, so fault injection and error counts see a batch as its ops.
func (x wrappedSets) WriteEntries(ops []SetOp) []error {
	return hookBatch(x.w, ops, SetOp.Name, x.w.inner.Sets.WriteEntries)
}

// hookBatch runs each op's Before hook; the ops it lets through go to write as one
// batch, and each op's outcome to the After hook.
func hookBatch[T any](w *wrapped, ops []T, name func(T) string, write func([]T) []error) []error {
	errs := make([]error, len(ops))
	pass := make([]T, 0, len(ops))
	idx := make([]int, 0, len(ops))
	for i, op := range ops {
		if w.h.Before != nil {
			if err := w.h.Before(name(op)); err != nil {
				errs[i] = err
				continue
			}
		}
		if w.h.Write != nil {
			if err := w.h.Write(op); err != nil {
				errs[i] = err
				continue
			}
		}
		pass, idx = append(pass, op), append(idx, i)
	}
	inner := write(pass)
	for j, i := range idx {
		errs[i] = inner[j]
		if w.h.After != nil {
			w.h.After(name(ops[i]), inner[j])
		}
	}
	return errs
}

type wrappedRules struct{ w *wrapped }

func (x wrappedRules) Restore(fam Family, rules *Ruleset) error {
	return x.w.call("Restore", func() error { return x.w.inner.Rules.Restore(fam, rules) })
}
func (x wrappedRules) Save(fam Family) (string, error) {
	return call1(x.w, "Save", func() (string, error) { return x.w.inner.Rules.Save(fam) })
}

type wrappedConntrack struct{ w *wrapped }

func (x wrappedConntrack) ClearUDP(vip, ep netip.AddrPort) error {
	return x.w.call("ClearUDP", func() error { return x.w.inner.Conntrack.ClearUDP(vip, ep) })
}
func (x wrappedConntrack) ReconcileUDP(f Family, stale func(orig, reply netip.AddrPort) bool) (int, error) {
	return call1(x.w, "ReconcileUDP", func() (int, error) { return x.w.inner.Conntrack.ReconcileUDP(f, stale) })
}
func (x wrappedConntrack) Stats() (ConntrackStats, error) {
	return call1(x.w, "Stats", x.w.inner.Conntrack.Stats)
}

package addrs

import (
	"net/netip"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Apply queues the bind or unbind that makes address a as desired, if any; the cache is
// updated as if it will succeed (Flush undoes it on failure).
func (r *Reconciler) Apply(a netip.Addr) {
	want := r.cfg.Desired().HasAddress(a)
	have := r.addrs.Has(a)
	if want != have {
		r.touch(a)
	}
	switch {
	case want && !have:
		r.queue = append(r.queue, kernel.AddressOp{Addr: a})
		r.addrs.Set(a, struct{}{})
	case !want && have:
		r.queue = append(r.queue, kernel.AddressOp{Addr: a, Unbind: true})
		r.addrs.Delete(a)
	}
}

// ApplyAll compares every address bound (addrs) or desired.
func (r *Reconciler) ApplyAll(addrs []netip.Addr) {
	for _, a := range addrs {
		r.Apply(a)
	}
	for a := range r.cfg.Desired().AddressSeq() {
		if !r.addrs.Has(a) {
			r.Apply(a)
		}
	}
}

// Flush sends the queued address writes as one batch, after any a full sync sends in
// the background (Start). A failure is added to errs, its cache entry restored, and the
// address queued for retry.
func (r *Reconciler) Flush(errs *[]error) {
	if len(r.queue) == 0 {
		return
	}
	ops := r.queue
	r.queue = nil
	// A full sync queues no address writes after its batch.
	r.cfg.Lock(&r.write, r.cfg.OnWait)
	results := r.cfg.Addresses.WriteAddresses(r.cfg.Device(), ops)
	r.write.Unlock()
	r.failed(ops, results, errs)
}

// failed handles the failures among the results of address writes ops.
func (r *Reconciler) failed(ops []kernel.AddressOp, results []error, errs *[]error) {
	for i, err := range results {
		if err == nil {
			continue
		}
		op := ops[i]
		if !r.cfg.Failed(op.Addr, err) {
			*errs = append(*errs, err)
		}
		if op.Unbind {
			r.addrs.Set(op.Addr, struct{}{})
		} else {
			r.addrs.Delete(op.Addr)
		}
	}
}

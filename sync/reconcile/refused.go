package reconcile

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// A write the kernel refuses for what it carries (kernel.ErrRefused: an element that
// overlaps another, an address of the other family) fails again however often it is
// retried. Counted as the sync's failure, one such object failed every sync of the node,
// so /healthz and /readyz failed with it and every other change waited for the retries'
// backoff. It costs only its own Service instead: it is queued for retry like any failed
// write, the sync succeeds without it, and its Service gets a Warning Event
// (KernelRefused, once until the Service changes, so retries make no Event storm), the
// log a line, and ipvs_proxier_kernel_refused_total a count.

// maxRefusedKept bounds the refused writes one sync keeps for its report.
const maxRefusedKept = 256

// refusals are the current sync's refused writes, for report, and what was said of
// earlier ones.
type refusals struct {
	observer Observer
	log      *zap.Logger
	events   EventSink
	refused  []refusedWrite
	// dropped counts the refused writes past maxRefusedKept.
	dropped int
	// unowned are the refused objects of no Service already logged, each said once.
	unowned map[string]struct{}
	// said are the Services whose refusals were reported since they last changed: one
	// Event a Service until it changes, however many syncs retry which of its writes.
	said map[proxier.ServiceKey]struct{}
}

func newRefusals(o Observer, log *zap.Logger, events EventSink) *refusals {
	return &refusals{observer: o, log: log, events: events, unowned: map[string]struct{}{}, said: map[proxier.ServiceKey]struct{}{}}
}

// changed has a refusal of the new state of Service k reported anew.
func (r *refusals) changed(k proxier.ServiceKey) { delete(r.said, k) }

// refusedWrite is one refused write: to a virtual server (or one of its real servers),
// an address, or a set member.
type refusedWrite struct {
	kind   string // "virtual_server", "real_server", "address", "set_member"
	vs     kernel.VSKey
	addr   netip.Addr
	member kernel.Member
	err    error
}

// what names the object, for the Event.
func (w refusedWrite) what() string {
	switch w.kind {
	case "virtual_server":
		return "virtual server " + w.vs.String()
	case "real_server":
		return "a real server of " + w.vs.String()
	case "address":
		return "address " + w.addr.String()
	}
	return "set member " + w.member.Set + " " + w.member.Entry.String()
}

// isolated reports whether err is the kernel refusing one object (kernel.ErrRefused)
// and, if so, keeps w for the sync's report: the caller leaves it out of the sync's error.
func (r *refusals) isolated(err error, w refusedWrite) bool {
	if !errors.Is(err, kernel.ErrRefused) {
		return false
	}
	r.observer.KernelRefused(w.kind)
	if len(r.refused) >= maxRefusedKept {
		r.dropped++
		return true
	}
	w.err = err
	r.refused = append(r.refused, w)
	return true
}

// report reports the sync's refused writes against the Services of desired that want
// them, and forgets them. Called at the end of each sync.
func (r *refusals) report(desired *proxier.Desired) {
	if len(r.refused) == 0 {
		return
	}
	owners := r.owners(desired)
	byService := map[proxier.ServiceKey][]refusedWrite{}
	for i, w := range r.refused {
		if len(owners[i]) == 0 {
			if _, said := r.unowned[w.what()]; !said && len(r.unowned) < maxRefusedKept {
				r.unowned[w.what()] = struct{}{}
				r.log.Warn("Kernel refused a write no Service wants; retried at each sync", zap.String("object", w.what()), zap.Error(w.err))
			}
			continue
		}
		for _, k := range owners[i] {
			byService[k] = append(byService[k], w)
		}
	}
	for k, ws := range byService {
		if _, said := r.said[k]; said {
			continue
		}
		r.said[k] = struct{}{}
		p := refusedProblem(k, ws)
		r.log.Warn("Kernel refused writes of a Service; the others are programmed", zap.String("namespace", k.Namespace),
			zap.String("name", k.Name), zap.String("message", p.Message))
		if r.events != nil {
			r.events.Warn(p)
		}
	}
	if r.dropped > 0 {
		r.log.Warn("Kernel refused more writes than reported", zap.Int("unreported", r.dropped))
	}
	clear(r.refused)
	r.refused, r.dropped = r.refused[:0], 0
}

// maxRefusedNamed bounds the objects a KernelRefused Event names.
const maxRefusedNamed = 4

// refusedProblem is one Service's KernelRefused problem for the writes ws: the objects
// named in order, and the first one's error.
func refusedProblem(k proxier.ServiceKey, ws []refusedWrite) proxier.Problem {
	slices.SortFunc(ws, func(a, b refusedWrite) int { return strings.Compare(a.what(), b.what()) })
	ws = slices.CompactFunc(ws, func(a, b refusedWrite) bool { return a.what() == b.what() })
	var names []string
	for _, w := range ws[:min(len(ws), maxRefusedNamed)] {
		names = append(names, w.what())
	}
	if more := len(ws) - len(names); more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	msg := fmt.Sprintf("the kernel refused %s (%v); the node's other Services are programmed, and these writes are retried at each sync",
		strings.Join(names, ", "), ws[0].err)
	return proxier.Problem{Kind: "Service", Namespace: k.Namespace, Name: k.Name, Reason: "KernelRefused", Message: proxier.BoundMessage(msg)}
}

// owners returns, for each refused write, the Services of desired that want its object:
// a virtual server's owner, and for an address or a member every Service whose state
// holds it (one pass over the desired state, only in a sync that had refusals).
func (r *refusals) owners(desired *proxier.Desired) [][]proxier.ServiceKey {
	owners := make([][]proxier.ServiceKey, len(r.refused))
	addrs := map[netip.Addr][]int{}
	members := map[kernel.Member][]int{}
	for i, w := range r.refused {
		switch w.kind {
		case "virtual_server", "real_server":
			if _, owner, ok := desired.VirtualServer(w.vs); ok {
				owners[i] = []proxier.ServiceKey{owner}
			}
		case "address":
			addrs[w.addr] = append(addrs[w.addr], i)
		default:
			members[w.member] = append(members[w.member], i)
		}
	}
	if len(addrs) == 0 && len(members) == 0 {
		return owners
	}
	for st := range desired.States() {
		for _, a := range st.Bind {
			for _, i := range addrs[a] {
				owners[i] = append(owners[i], st.Key)
			}
		}
		if len(members) == 0 {
			continue
		}
		for m := range st.Members.All() {
			for _, i := range members[m] {
				owners[i] = append(owners[i], st.Key)
			}
		}
	}
	for i := range owners {
		slices.SortFunc(owners[i], func(a, b proxier.ServiceKey) int {
			return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
		})
		owners[i] = slices.Compact(owners[i])
	}
	return owners
}

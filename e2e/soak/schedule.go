package main

import (
	"math/rand/v2"
	"slices"
	"time"
)

// The faults the soak injects, in the order the schedule takes them round.
const (
	faultDaemonKill   = "daemon-sigkill"    // SIGKILL, then started again as the DaemonSet would
	faultAPIRestart   = "apiserver-restart" // the apiserver stopped and started: every watch broken
	faultKernelEdit   = "kernel-edit"       // ipvsadm, ipset and ip edits behind the daemon's back
	faultRelist       = "compaction-relist" // etcd compacted while the apiserver is down: 410 Gone, relists
	faultAddressFlap  = "address-flap"      // a node address removed and added back
	faultConntrackFil = "conntrack-fill"    // nf_conntrack_max lowered and connections held near it
)

// faultKinds is every fault, in the schedule's order.
var faultKinds = []string{faultDaemonKill, faultAPIRestart, faultKernelEdit, faultRelist, faultAddressFlap, faultConntrackFil}

// plannedFault is a fault due at an offset from the soak's start.
type plannedFault struct {
	At     time.Duration
	Kind   string
	Random bool // drawn at random, not from the round
}

// faultPlan is when the faults come: a round of every kind each `every` from `from` until
// `to`, and random ones between (exponential gaps of mean randomMean, a kind drawn at
// random). The daemon is killed only before killBefore: the growth verdicts fit the
// last part of the run, where a restarted process would start its memory anew.
type faultPlan struct {
	From, To, Every, RandomMean, KillBefore time.Duration
}

// schedule lists the planned faults in time order, drawn from seed.
func (p faultPlan) schedule(seed uint64) []plannedFault {
	var out []plannedFault
	add := func(f plannedFault) {
		if f.Kind == faultDaemonKill && f.At >= p.KillBefore {
			return
		}
		out = append(out, f)
	}
	if p.Every > 0 {
		k := 0
		for at := p.From; at < p.To; at += p.Every {
			add(plannedFault{At: at, Kind: faultKinds[k%len(faultKinds)]})
			k++
		}
	}
	if p.RandomMean > 0 {
		r := rand.New(rand.NewPCG(seed, seed^0xfa017))
		for at := p.From + time.Duration(r.ExpFloat64()*float64(p.RandomMean)); at < p.To; at += time.Duration(r.ExpFloat64() * float64(p.RandomMean)) {
			add(plannedFault{At: at, Kind: faultKinds[r.IntN(len(faultKinds))], Random: true})
		}
	}
	slices.SortStableFunc(out, func(a, b plannedFault) int { return int(a.At - b.At) })
	return out
}

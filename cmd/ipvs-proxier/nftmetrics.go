package main

import (
	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
)

// nftTransactions reads the nftables backend's transaction counts for the metrics; nil
// when the sets are ipsets.
func nftTransactions(k kernel.Kernel) func() metrics.Transactions {
	n, ok := k.Sets.(*linux.Nftables)
	if !ok {
		return nil
	}
	return func() metrics.Transactions {
		s := n.Stats()
		return metrics.Transactions{Count: s.Transactions, LargestMembers: s.LargestMembers, Longest: s.Longest}
	}
}

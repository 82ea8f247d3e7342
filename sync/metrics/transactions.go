package metrics

import "github.com/prometheus/client_golang/prometheus"

// registerTransactions exports the nftables backend's transactions: a cold start at
// 30,000 Services writes ~230,000 set members, and one transaction holding them all
// would hold the kernel's nfnl lock long enough to stall the node (kube-proxy's nftables
// mode: kubernetes#139513), so the backend bounds each one; these show the bound held.
func (m *Metrics) registerTransactions(read func() Transactions) {
	m.Registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ipvs_proxier_nftables_transactions_total",
			Help: "nftables transactions committed (or refused) by the kernel."},
			func() float64 { return float64(read().Count) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ipvs_proxier_nftables_transaction_max_members",
			Help: "The most set members one nftables transaction carried."},
			func() float64 { return float64(read().LargestMembers) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ipvs_proxier_nftables_transaction_longest_seconds",
			Help: "The longest one nftables transaction took, from its send to the kernel's last answer."},
			func() float64 { return read().Longest.Seconds() }))
}

// Package rules is the writer's reconciler of our rules (the KUBE-* iptables chains, or
// the chains of our nftables table) and of the UDP conntrack flows they leave stale: the
// rules restored when their rendering changed or the kernel's copy drifted, adopted when
// they already read as ours, and a full sync's conntrack reconcile. The syncer
// (sync/reconcile) holds its lock, decides when each step runs and calls them in order.
package rules

import (
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Config is what the reconciler needs of the syncer: the kernel, and the syncer's state
// it reads (the translation config, the desired state) or reports to.
type Config struct {
	Rules     kernel.Rules
	Conntrack kernel.Conntrack
	Log       *zap.Logger
	Now       func() time.Time
	// SyncPeriod bounds how often the UDP conntrack reconcile runs.
	SyncPeriod time.Duration
	// Config returns the translation config in force: the families, and what the rules
	// are rendered from.
	Config func() *proxier.Config
	// Desired returns the desired state in force.
	Desired func() *proxier.Desired
	// Retry queues the rules for the next sync: a restore failed.
	Retry func()
	// NeedFull asks for a full sync: the kernel's copy of the rules could not be read.
	NeedFull func()
	// RestoreFailed is told of each family whose restore failed; Reconciled of each
	// conntrack reconcile: its family, how long it took, how many flows it deleted.
	RestoreFailed func(kernel.Family)
	Reconciled    func(f kernel.Family, took time.Duration, deleted int)
}

// Reconciler keeps the rules we last restored and the kernel's copy of them, and when
// the conntrack reconcile last ran. It is not safe for concurrent use: the syncer calls
// it with its lock held.
type Reconciler struct {
	cfg   Config
	rules map[kernel.Family]string
	saved map[kernel.Family]string
	// lastReconcile is when the conntrack reconcile last ran; reconcileOff is set when
	// the kernel cannot filter the dump.
	lastReconcile time.Time
	reconcileOff  bool
}

// New returns a reconciler that has restored nothing yet.
func New(cfg Config) *Reconciler {
	return &Reconciler{cfg: cfg, rules: map[kernel.Family]string{}, saved: map[kernel.Family]string{}}
}

package rules

import (
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Sync restores our chains when the rendered text changed, or, with checkDrift, when
// the kernel's copy no longer matches what we last applied.
func (r *Reconciler) Sync(checkDrift bool) error {
	var errs []error
	cfg := r.cfg.Config()
	for _, f := range cfg.Families {
		rs := proxier.Rules(cfg, f, r.cfg.Desired().OutFilters())
		text := rs.String()
		if _, known := r.rules[f]; !known && checkDrift {
			// First look after a start: adopt rules that already read as ours. When the
			// backend's saved form differs from ours, the restore below is one atomic
			// iptables-restore transaction, so traffic never sees a gap.
			if cur, err := r.cfg.Rules.Save(f); err == nil && cur == text {
				r.rules[f], r.saved[f] = text, cur
				continue
			}
		}
		if text == r.rules[f] && checkDrift {
			cur, err := r.cfg.Rules.Save(f)
			if err != nil {
				errs = append(errs, err)
				r.cfg.NeedFull()
				continue
			}
			if cur == r.saved[f] {
				continue
			}
			r.cfg.Log.Info("iptables rules drifted; restoring", zap.Stringer("family", f))
		} else if text == r.rules[f] {
			continue
		}
		if err := r.cfg.Rules.Restore(f, rs); err != nil {
			r.cfg.RestoreFailed(f)
			delete(r.rules, f)
			errs = append(errs, err)
			r.cfg.Retry()
			continue
		}
		r.rules[f] = text
		saved, err := r.cfg.Rules.Save(f)
		if err != nil {
			errs = append(errs, err)
			delete(r.rules, f)
			r.cfg.Retry()
			continue
		}
		r.saved[f] = saved
	}
	return errors.Join(errs...)
}

// NoneYet reports whether no family's rules backend holds a chain of our names: a new
// node. Elsewhere the rules already there serve until the end of the full sync, which
// restores ours once every Service is written: kube-proxy's iptables mode shares the nat
// chain KUBE-SERVICES with us, and restoring ours early replaced its DNAT rules while
// only the critical Services were in IPVS, so the others' ClusterIPs were refused (by
// KUBE-CLUSTER-IPS-CHECK) until the sync ended (`make e2e-kubelet`, the migration guide).
func (r *Reconciler) NoneYet() bool {
	for _, f := range r.cfg.Config().Families {
		saved, err := r.cfg.Rules.Save(f)
		if err != nil || hasChains(saved) {
			return false
		}
	}
	return true
}

// hasChains reports whether a backend's Save names any chain: iptables-save's ":NAME"
// lines, or nftables' "chain NAME".
func hasChains(saved string) bool {
	for _, l := range strings.Split(saved, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, ":") || strings.HasPrefix(l, "chain ") {
			return true
		}
	}
	return false
}

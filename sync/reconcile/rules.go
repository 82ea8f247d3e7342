package reconcile

import (
	"errors"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// syncRules restores our iptables chains when the rendered text changed, or, with
// checkDrift, when the kernel's copy no longer matches what we last applied.
func (s *Syncer) syncRules(checkDrift bool) error {
	var errs []error
	for _, f := range s.cfg.Families {
		text := proxier.RenderRules(&s.cfg, f, s.desired.OutFilters())
		if _, known := s.rules[f]; !known && checkDrift {
			// First look after a start: adopt rules that already read as ours. When the
			// backend's saved form differs from ours, the restore below is one atomic
			// iptables-restore transaction, so traffic never sees a gap.
			if cur, err := s.k.Iptables.Save(f); err == nil && cur == text {
				s.rules[f], s.saved[f] = text, cur
				continue
			}
		}
		if text == s.rules[f] && checkDrift {
			cur, err := s.k.Iptables.Save(f)
			if err != nil {
				errs = append(errs, err)
				s.needFull = true
				continue
			}
			if cur == s.saved[f] {
				continue
			}
			s.log.Info("iptables rules drifted; restoring", zap.Stringer("family", f))
		} else if text == s.rules[f] {
			continue
		}
		if err := s.k.Iptables.Restore(f, text); err != nil {
			s.opts.Metrics.IptablesRestoreFailed(f)
			delete(s.rules, f)
			errs = append(errs, err)
			s.retry.RulesChanged = true
			continue
		}
		s.rules[f] = text
		saved, err := s.k.Iptables.Save(f)
		if err != nil {
			errs = append(errs, err)
			delete(s.rules, f)
			s.retry.RulesChanged = true
			continue
		}
		s.saved[f] = saved
	}
	return errors.Join(errs...)
}

// rulesState is the rules we last restored, and the kernel's copy last saved.
type rulesState struct {
	rules map[kernel.Family]string
	saved map[kernel.Family]string
}

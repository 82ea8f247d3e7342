package reconcile

import (
	"errors"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// The Services a new node needs before any other: the apiserver's own (which CNI
// plugins, CoreDNS and most controllers dial by its ClusterIP) and the cluster DNS
// (kubeadm's kube-system/kube-dns, found by its k8s-app label). kube-proxy's IPVS mode
// leaves the apiserver's ClusterIP unreachable for ~30 s at 2,000 Services
// (kubernetes/kubernetes#133773); at 30,000 a whole cold start takes minutes.
var (
	kubernetesService = proxier.ServiceKey{Namespace: "default", Name: "kubernetes"}
	dnsLabel          = [2]string{proxier.LabelK8sApp, "kube-dns"}
)

// criticalKeys are the critical Services of src that exist, the apiserver's first.
func criticalKeys(src source.Source) []proxier.ServiceKey {
	var out []proxier.ServiceKey
	if src.Service(kubernetesService) != nil {
		out = append(out, kubernetesService)
	}
	for _, k := range src.ServiceKeys() {
		if k.Namespace != "kube-system" {
			continue
		}
		if svc := src.Service(k); svc != nil && svc.Label(dnsLabel[0]) == dnsLabel[1] {
			out = append(out, k)
		}
	}
	return out
}

// ProgramCriticalEarly programs the critical Services of src, before the first full
// sync, when that sync has not begun: src holds only them, their slices and the Node,
// which the daemon reads straight from the API server while the informers still list
// every Service of the cluster (17 s of a new node's start at 30,000 Services in the
// emulated VM, `make bench-scale`). They are translated on their own, into a desired
// state of their own, and written as programCritical writes them; the first full sync
// then translates everything and writes the rest. It reports whether they were
// programmed; if not, the first full sync programs them first as before.
func (s *Syncer) ProgramCriticalEarly(src source.Source) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.criticalDone || s.built || s.fullRunning {
		return false
	}
	keys := criticalKeys(src)
	if len(keys) == 0 {
		return false
	}
	cfg, err := source.NodeConfig(s.opts.Config, src.Node(), src.ServiceCIDRs(), s.opts.NodeOptions)
	if err != nil {
		s.log.Warn("Cannot list node addresses; using the Node object's", zap.Error(err))
	}
	desired, oldCfg := s.desired, s.cfg
	defer func() { s.desired, s.cfg = desired, oldCfg }()
	s.desired, s.cfg = proxier.NewDesired(), cfg
	for _, k := range keys {
		s.desired.Set(proxier.Translate(&s.cfg, k, src.Service(k), src.Slices(k)), nil)
	}
	if err := s.k.Addresses.EnsureDummy(s.cfg.DummyDevice); err != nil {
		s.log.Warn("Cannot program the critical Services first; the full sync programs them with the rest", zap.Error(err))
		return false
	}
	for _, set := range proxier.Sets(s.cfg.Families) {
		if err := s.k.Sets.EnsureSet(s.sets.Sized(set)); err != nil {
			s.log.Warn("Cannot program the critical Services first; the full sync programs them with the rest", zap.Error(err))
			return false
		}
	}
	s.criticalDone = s.programCritical(keys)
	return s.criticalDone
}

// programCritical writes the critical Services' virtual and real servers, addresses and
// set members, then the rules where the node has none yet (rules.NoneYet), before the first
// full sync reads the kernel and writes everything else: on a new node they answer
// within one sync's first seconds, not at its end. Writes are adds (an object already
// there, after a restart, is left as it is) and every failure is only logged: the full
// sync that follows reads the kernel and repairs whatever this pass did or did not do.
// Called with s.mu held, the desired state computed and the sets made. It reports
// whether every write succeeded.
func (s *Syncer) programCritical(keys []proxier.ServiceKey) bool {
	if len(keys) == 0 {
		return false
	}
	start := time.Now()
	var vss []kernel.VirtualServerOp
	var rss []kernel.RealServerOp
	var addrs []kernel.AddressOp
	var members []kernel.SetOp
	for _, k := range keys {
		st := s.desired.Service(k)
		if st == nil {
			continue
		}
		for _, vs := range st.VirtualServers {
			if _, owner, ok := s.desired.VirtualServer(vs.VSKey); !ok || owner != k {
				continue // another Service won it; the full sync writes the winner's
			}
			vss = append(vss, kernel.VirtualServerOp{VS: vs.VirtualServer})
			for rs := range vs.RealServers.All() {
				rss = append(rss, kernel.RealServerOp{VS: vs.VSKey, RS: rs})
			}
		}
		for _, a := range st.Bind {
			addrs = append(addrs, kernel.AddressOp{Addr: a})
		}
		for m := range st.Members.All() {
			if s.desired.HasMember(m) {
				members = append(members, kernel.SetOp{Set: m.Set, Entry: m.Entry})
			}
		}
	}
	var errs []error
	for _, err := range s.k.IPVS.WriteVirtualServers(vss) {
		if !errors.Is(err, kernel.ErrExist) { // there from before a restart: adopted later
			errs = append(errs, err)
		}
	}
	errs = append(errs, s.k.IPVS.WriteRealServers(rss)...)
	errs = append(errs, s.k.Addresses.WriteAddresses(s.cfg.DummyDevice, addrs)...)
	errs = append(errs, s.k.Sets.WriteEntries(members)...)
	if s.rules.NoneYet() {
		errs = append(errs, s.rules.Sync(true))
	}
	if err := errors.Join(slices.DeleteFunc(errs, func(e error) bool { return e == nil })...); err != nil {
		s.log.Warn("Cannot program the critical Services first; the full sync programs them with the rest", zap.Error(err))
		return false
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.String()
	}
	s.log.Info("Programmed the critical Services first", zap.Strings("services", names),
		zap.Int("virtualServers", len(vss)), zap.Duration("took", time.Since(start)), zap.Duration("sinceStart", s.opts.Now().Sub(s.started)))
	return true
}

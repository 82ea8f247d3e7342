package main

import (
	"bytes"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// removeOtherBackend removes what the other rules backend left on the node, once the
// first sync has programmed this one: switching a node between backends, or from
// kube-proxy's IPVS mode (whose chains and sets have our names) to the nftables backend,
// leaves nothing of the old one behind; nor does a move from kube-proxy's nftables mode
// (its tables, which kube-proxy's IPVS mode deletes at start). Run after that sync, not before, so the old rules
// serve until the new ones are in place and no request meets a node with neither.
func removeOtherBackend(b proxier.RulesBackend, log *zap.Logger) {
	var out bytes.Buffer
	var err error
	if b == proxier.RulesNftables {
		if linux.HaveIptables() {
			// kube-proxy's iptables mode's chains too (KUBE-SVC-*, KUBE-PROXY-CANARY,
			// ...), after a move from that mode: nothing in iptables is ours here.
			err = cleanupChains(&out, chainsUnion(proxier.RuleChains, linux.IptablesModeChains), linux.IptablesModePrefixes, false)
		}
		if serr := cleanupSets(&out); err == nil {
			err = serr
		}
	} else {
		err = cleanupNftables(&out)
	}
	// kube-proxy's nftables-mode tables, after a move from that mode: their DNAT rules
	// come before IPVS and would keep serving their last sync's endpoints.
	err = errors.Join(err, cleanupKubeProxyNftables(&out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err != nil {
		log.Warn("Cannot remove the other rules backend's objects; `ipvs-proxier cleanup` removes both", zap.Strings("done", lines), zap.Error(err))
		return
	}
	log.Info("Removed the other rules backend's objects", zap.String("backend", string(b)), zap.Strings("done", lines))
}

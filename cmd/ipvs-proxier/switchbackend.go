package main

import (
	"bytes"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// removeOtherBackends removes what the other rules backends left on the node, once the
// first sync has programmed this one: switching a node between backends, or from
// kube-proxy's IPVS mode (whose chains and sets have our names) to the nftables backend,
// leaves nothing of the old one behind (with kube-proxy's iptables-mode chains: nothing
// in iptables is ours then); nor does a move from kube-proxy's nftables mode (its
// tables, which kube-proxy's IPVS mode deletes at start). Run after that sync, not
// before, so the old rules serve until the new ones are in place and no request meets a
// node with neither.
func removeOtherBackends(b *proxier.RulesBackend, log *zap.Logger) {
	var out bytes.Buffer
	var errs []error
	for _, other := range rulesBackends {
		if other.rules != b {
			errs = append(errs, other.cleanup(&out, cleanupScope{leftovers: true, quiet: true}))
		}
	}
	// kube-proxy's nftables-mode tables, after a move from that mode: their DNAT rules
	// come before IPVS and would keep serving their last sync's endpoints.
	err := errors.Join(append(errs, cleanupKubeProxyNftables(&out))...)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err != nil {
		log.Warn("Cannot remove the other rules backend's objects; `ipvs-proxier cleanup` removes both", zap.Strings("done", lines), zap.Error(err))
		return
	}
	log.Info("Removed the other rules backend's objects", zap.String("backend", b.Name), zap.Strings("done", lines))
}

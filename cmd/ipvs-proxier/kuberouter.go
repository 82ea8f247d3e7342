package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
)

// cleanupKubeRouter removes what kube-router's service proxy left on the node (it
// leaves everything when it stops: docs/migration.md), by kube-router's exact names and
// rules (linux.KubeRouterChains and the rest), and nothing of ours: the virtual servers
// on kube-dummy-if's addresses that we do not own, its chains with the jumps to them,
// its masquerade rule, its ipsets, kube-dummy-if itself, its policy rule and table-78
// route. Safe while the daemon runs, which calls it after its first sync. dummy is our
// dummy interface; exclude, --ipvs-exclude-cidrs.
func cleanupKubeRouter(out io.Writer, dummy string, exclude []netip.Prefix) error {
	var errs []error
	krAddrs, addrErr := linux.KubeRouterAddresses()
	if dummy == linux.KubeRouterDummy { // ours by --dummy-device: nothing on it is kube-router's
		krAddrs, addrErr = nil, nil
	}
	errs = append(errs, addrErr)
	if addrErr == nil { // else it is no dummy: neither it nor what is on its addresses is kube-router's
		vs, err := cleanupKubeRouterVirtualServers(dummy, krAddrs, exclude)
		errs = append(errs, err)
		fmt.Fprintf(out, "kube-router virtual servers deleted: %d\n", vs)
	}
	if linux.HaveIptables() {
		ipt := linux.NewIptables(nil)
		for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
			n, err := ipt.RemoveChains(f, linux.KubeRouterChains, nil)
			m, merr := ipt.RemoveKubeRouterMasquerade(f)
			errs = append(errs, err, merr)
			fmt.Fprintf(out, "%s kube-router chains removed: %d, masquerade rules: %d\n", f, n, m)
		}
	}
	if linux.ModuleLoaded("ip_set") { // else there are none (and asking would load it)
		n, err := linux.DestroySets(linux.KubeRouterSets)
		errs = append(errs, err)
		fmt.Fprintf(out, "kube-router ipsets destroyed: %d\n", n)
	}
	if addrErr == nil && dummy != linux.KubeRouterDummy {
		errs = append(errs, deleteKubeRouterDummy(out, dummy, krAddrs))
	}
	n, err := linux.RemoveKubeRouterRoutes()
	errs = append(errs, err)
	fmt.Fprintf(out, "kube-router ip rule and table-%d route removed: %d\n", linux.KubeRouterDSRTable, n)
	return errors.Join(errs...)
}

// deleteKubeRouterDummy deletes kube-dummy-if after making sure that the addresses also
// bound on our dummy stay local (linux.KeepLocalRoutes).
func deleteKubeRouterDummy(out io.Writer, dummy string, krAddrs []netip.Addr) error {
	ours, err := (&linux.Addresses{}).ListAddresses(dummy)
	if err != nil && !errors.Is(err, kernel.ErrNotFound) {
		return fmt.Errorf("%s kept: %w", linux.KubeRouterDummy, err)
	}
	shared := slices.DeleteFunc(slices.Clone(krAddrs), func(a netip.Addr) bool { return !slices.Contains(ours, a) })
	if _, err := linux.KeepLocalRoutes(linux.KubeRouterDummy, dummy, shared); err != nil {
		return fmt.Errorf("%s kept: %w", linux.KubeRouterDummy, err)
	}
	deleted, err := linux.DeleteDummy(linux.KubeRouterDummy)
	fmt.Fprintf(out, "dummy interface %s deleted: %v (%d of its addresses also ours)\n", linux.KubeRouterDummy, deleted, len(shared))
	return err
}

// cleanupKubeRouterVirtualServers deletes the virtual servers kubeRouterVirtualServers
// picks. Without IPVS on the node there are none.
func cleanupKubeRouterVirtualServers(dummy string, krAddrs []netip.Addr, exclude []netip.Prefix) (int, error) {
	if len(krAddrs) == 0 {
		return 0, nil
	}
	return deleteVirtualServers(dummy, func(vss []kernel.DumpedVS, nodeIPs []netip.Addr, owned ownedFunc) []kernel.VirtualServer {
		return kubeRouterVirtualServers(vss, krAddrs, nodeIPs, exclude, func(k kernel.VSKey, nodeIPs []netip.Addr) bool { return owned(k, nodeIPs, exclude) })
	})
}

// kubeRouterVirtualServers returns kube-router's virtual servers among vss: those on an
// address of kube-dummy-if (krAddrs) that are not ours by our one ownership rule
// (owned, sets.Owns) and not excluded. After a migration an address may be bound
// on both dummies, ours having taken the Service over: the virtual server is then the
// same kernel object for both, ours, and stays. kube-router's addresses are no node
// IPs for this rule (linux.LocalAddresses counts every interface but ours), else one of
// its Service ports in the NodePort range would pass for one of our NodePorts. Its
// NodePorts, on the node IPs, are ours by that rule: the daemon's prune takes them.
func kubeRouterVirtualServers(vss []kernel.DumpedVS, krAddrs, nodeIPs []netip.Addr, exclude []netip.Prefix, owned func(kernel.VSKey, []netip.Addr) bool) []kernel.VirtualServer {
	nodeIPs = slices.DeleteFunc(slices.Clone(nodeIPs), func(a netip.Addr) bool { return slices.Contains(krAddrs, a) })
	var out []kernel.VirtualServer
	for _, vs := range vss {
		if vs.Address.IsValid() && slices.Contains(krAddrs, vs.Address) && !owned(vs.VSKey, nodeIPs) &&
			!slices.ContainsFunc(exclude, func(p netip.Prefix) bool { return p.Contains(vs.Address) }) {
			out = append(out, vs.VirtualServer)
		}
	}
	return out
}

// removeKubeRouterLeftovers runs cleanupKubeRouter once the first sync has programmed
// our rules. Not before: until then kube-router's virtual servers and dummy addresses
// are what serves the Services. After it, what kube-router left does harm: its INPUT
// rule sends traffic to every address in its frozen kube-router-svip set through
// KUBE-ROUTER-SERVICES, which REJECTs each address and port missing from
// kube-router-svip-prt (setupIpvsFirewall in kube-router's
// network_services_controller.go), so a port later added to a Service, or a ClusterIP
// freed and given to a new Service, is refused before IPVS sees it; its nat rule
// masquerades every IPVS connection to the node IP, so the client's address is lost
// for externalTrafficPolicy Local; its virtual servers for Services deleted since
// keep answering with their old endpoints; and while kube-dummy-if holds its Service
// IPs, every node-IP reader counts them as node IPs (NodePorts are opened on them).
func removeKubeRouterLeftovers(dummy string, exclude []netip.Prefix, log *zap.Logger) {
	var out bytes.Buffer
	err := cleanupKubeRouter(&out, dummy, exclude)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err != nil {
		log.Warn("Cannot remove kube-router's service-proxy leftovers; `ipvs-proxier cleanup --leftovers-only` removes them", zap.Strings("done", lines), zap.Error(err))
		return
	}
	log.Info("Removed kube-router's service-proxy leftovers", zap.Strings("done", lines))
}

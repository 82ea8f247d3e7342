package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile/sets"
)

// runCleanup removes everything ipvs-proxier owns on this node, and nothing else: our
// virtual servers (the prune rule of the daemon), our iptables chains and the jumps to
// them, our ipsets, and the dummy interface. Run it after stopping the daemon. It is
// idempotent. Unlike kube-proxy's --cleanup it never flushes the whole IPVS table
// (pkg/proxy/ipvs/cleanup.go calls ipvs.Flush: every virtual server on the host), and it
// destroys the KUBE-6-* sets too (kube-proxy destroys only the IPv4-named ones).
//
// Two narrower modes serve migrations (docs/migration.md): --leftovers-only removes
// just the kube-proxy iptables-mode chains we do not use, kube-proxy's nftables-mode
// tables and what kube-router's service proxy left (cleanupKubeRouter), and is safe
// while the daemon runs; --iptables-mode-leftovers adds those to the full cleanup;
// --keep-shared-chains leaves the chains kube-proxy's iptables mode also uses, for a
// rollback where kube-proxy already runs again.
func runCleanup(args []string, out io.Writer) error {
	fs := pflag.NewFlagSet("cleanup", pflag.ContinueOnError)
	dummy := fs.String("dummy-device", proxier.DefaultDummyDevice, "dummy interface that holds the VIPs")
	leftovers := fs.Bool("iptables-mode-leftovers", false, "also remove kube-proxy iptables-mode chains (KUBE-SVC-*, KUBE-SEP-*, KUBE-NODEPORTS, ...), its nftables-mode tables (ip and ip6 kube-proxy) and kube-router's service-proxy leftovers (kube-dummy-if, kube-router-* ipsets, KUBE-ROUTER-* chains)")
	excludeFlag := fs.StringSlice("ipvs-exclude-cidrs", nil, "CIDRs whose virtual servers are left alone")
	leftoversOnly := fs.Bool("leftovers-only", false, "remove only kube-proxy iptables-mode chains ipvs-proxier does not use, its nftables-mode tables and kube-router's service-proxy leftovers; safe while the daemon runs")
	keepShared := fs.Bool("keep-shared-chains", false, "leave the chains kube-proxy's iptables mode also uses (KUBE-SERVICES, ...): for a rollback with kube-proxy running")
	fs.SetOutput(out)
	fs.Usage = func() {
		commandUsage(out, fs, "ipvs-proxier cleanup [flags]",
			"Removes what ipvs-proxier programmed on this node (its virtual servers, sets, chains, dummy interface and\n"+
				"the local routes of --vip-local-routes) and nothing else; with --iptables-mode-leftovers also kube-proxy iptables mode's chains\n"+
				"and kube-router's service-proxy leftovers.",
			"  kubectl -n kube-system exec POD -- ipvs-proxier cleanup --leftovers-only")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	// Every argument is checked before the first change, as the daemon checks them
	// before it writes: a --dummy-device that names the loopback or a real interface
	// would have made its addresses' virtual servers "ours" to delete.
	o := &options{dummyDevice: *dummy}
	if err := o.validDummyName(); err != nil {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	if err := linux.CheckDummy(*dummy); err != nil {
		return fmt.Errorf("--dummy-device: %w; nothing was changed", err)
	}
	exclude, err := o.parsePrefixes("ipvs-exclude-cidrs", *excludeFlag)
	if err != nil {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	if *leftoversOnly {
		ipt := linux.NewIptables(nil)
		var errs []error
		for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
			n, err := ipt.RemoveChains(f, chainsMinus(linux.IptablesModeChains, proxier.RuleChains), linux.IptablesModePrefixes)
			errs = append(errs, err)
			fmt.Fprintf(out, "%s kube-proxy iptables-mode chains removed (%s): %d\n", f, ipt.Mode(), n)
		}
		errs = append(errs, cleanupKubeProxyNftables(out))
		errs = append(errs, cleanupKubeRouter(out, *dummy, exclude))
		return errors.Join(errs...)
	}
	var errs []error
	vs, err := cleanupVirtualServers(*dummy, exclude)
	errs = append(errs, err)
	fmt.Fprintf(out, "virtual servers deleted: %d\n", vs)
	if *leftovers {
		errs = append(errs, cleanupKubeRouter(out, *dummy, exclude))
	}

	for _, b := range rulesBackends {
		errs = append(errs, b.cleanup(out, cleanupScope{leftovers: *leftovers, keepShared: *keepShared}))
	}
	if *leftovers {
		errs = append(errs, cleanupKubeProxyNftables(out))
	}
	deleted, err := linux.DeleteDummy(*dummy)
	errs = append(errs, err)
	fmt.Fprintf(out, "dummy interface %s deleted: %v\n", *dummy, deleted)
	routes, err := linux.DeleteLocalRoutes()
	errs = append(errs, err)
	fmt.Fprintf(out, "local routes deleted (proto %d): %d\n", linux.RouteProtocol, routes)
	return errors.Join(errs...)
}

// cleanupIptables removes the iptables backend's objects: our iptables chains (with
// scope.leftovers kube-proxy's iptables-mode chains too) in both families, with the
// jumps to them, and our ipsets.
func cleanupIptables(out io.Writer, scope cleanupScope) error {
	chains, prefixes := proxier.RuleChains, []string(nil)
	if scope.leftovers {
		chains = chainsUnion(chains, linux.IptablesModeChains)
		prefixes = linux.IptablesModePrefixes
	}
	var err error
	if linux.HaveIptables() {
		err = cleanupChains(out, chains, prefixes, scope.keepShared)
	} else if !scope.quiet {
		fmt.Fprintln(out, "iptables chains: no iptables on this node")
	}
	return errors.Join(err, cleanupSets(out))
}

// cleanupChains removes our iptables chains (chains, and those named with prefixes) in
// both families, with the jumps to them.
func cleanupChains(out io.Writer, chains map[string][]string, prefixes []string, keepShared bool) error {
	var errs []error
	ipt := linux.NewIptables(nil)
	for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		// With kube-proxy running beside us (a rollback), it rewrites the shared chains
		// and re-adds its jumps while we read and remove: a removal that raced with it
		// (EBUSY on a chain it jumps to again) is read and tried again.
		var n int
		var err error
		for attempt := 1; ; attempt++ {
			if keepShared {
				// Keep a shared chain only where kube-proxy took it over: in a family it
				// does not serve (say IPv6 on an IPv4 node) the chain still holds our
				// rules, which match our sets and would keep them from being destroyed.
				using, lerr := ipt.ChainsMatchingSets(f, "KUBE-")
				if lerr != nil {
					err = lerr
					break
				}
				chains = chainsUnion(chainsMinus(proxier.RuleChains, linux.IptablesModeChains), chainsIntersect(proxier.RuleChains, using))
			}
			var m int
			m, err = ipt.RemoveChains(f, chains, prefixes)
			n += m
			if err == nil || attempt == cleanupAttempts {
				break
			}
			time.Sleep(cleanupRetryDelay)
		}
		errs = append(errs, err)
		fmt.Fprintf(out, "%s iptables chains removed (%s): %d\n", f, ipt.Mode(), n)
	}
	return errors.Join(errs...)
}

// cleanupSets destroys our ipsets; without the ip_set module there are none (and asking
// would load it).
func cleanupSets(out io.Writer) error {
	if !linux.ModuleLoaded("ip_set") {
		fmt.Fprintln(out, "ipsets: ip_set not loaded, none to destroy")
		return nil
	}
	var names []string
	for _, s := range proxier.Sets([]kernel.Family{kernel.IPv4, kernel.IPv6}) {
		names = append(names, s.Name)
	}
	n, err := linux.DestroySets(names)
	fmt.Fprintf(out, "ipsets destroyed: %d\n", n)
	return err
}

// cleanupNftables deletes the nftables backend's tables (ip and ip6 ipvs-proxier), with
// their sets and chains; without nf_tables loaded there are none.
func cleanupNftables(out io.Writer) error {
	if !linux.ModuleLoaded("nf_tables") {
		fmt.Fprintln(out, "nftables tables: nf_tables not loaded, none to delete")
		return nil
	}
	x := linux.NewNftables(proxier.NftTable)
	defer x.Close()
	n, err := x.DeleteTables()
	fmt.Fprintf(out, "nftables tables deleted: %d\n", n)
	return err
}

// cleanupKubeProxyNftables deletes kube-proxy's nftables-mode tables (ip and ip6
// kube-proxy), as kube-proxy's IPVS and iptables modes do at start
// (cmd/kube-proxy/app/server_linux.go, platformCleanup): left on a node that ran
// nftables mode, their DNAT rules, at a hook priority before IPVS, keep taking the
// Services' traffic to the endpoints of their last sync.
func cleanupKubeProxyNftables(out io.Writer) error {
	if !linux.ModuleLoaded("nf_tables") {
		fmt.Fprintln(out, "kube-proxy nftables-mode tables: nf_tables not loaded, none to delete")
		return nil
	}
	x := linux.NewNftables(linux.KubeProxyNftTable)
	defer x.Close()
	n, err := x.DeleteTables()
	fmt.Fprintf(out, "kube-proxy nftables-mode tables deleted: %d\n", n)
	return err
}

// cleanupAttempts and cleanupRetryDelay bound the retries of a chain removal that raced
// with kube-proxy.
const (
	cleanupAttempts   = 4
	cleanupRetryDelay = 2 * time.Second
)

// cleanupVirtualServers deletes the virtual servers the daemon would prune. Without IPVS
// on the node there is nothing to delete.
func cleanupVirtualServers(dummy string, exclude []netip.Prefix) (int, error) {
	return deleteVirtualServers(dummy, func(vss []kernel.DumpedVS, nodeIPs []netip.Addr, owned ownedFunc) []kernel.VirtualServer {
		var out []kernel.VirtualServer
		for _, vs := range vss {
			if owned(vs.VSKey, nodeIPs, exclude) {
				out = append(out, vs.VirtualServer)
			}
		}
		return out
	})
}

// ownedFunc is sets.Owns over what the node holds: whether a virtual server is ours
// to prune, given the node IPs and the excluded CIDRs.
type ownedFunc func(k kernel.VSKey, nodeIPs []netip.Addr, exclude []netip.Prefix) bool

// deleteVirtualServers dumps the virtual servers and deletes, in one batch, those pick
// returns, given the node IPs and our ownership rule as this node holds it: the
// addresses on our dummy (either mode's: bound, or local routes), the sets that name
// node IPs (read before cleanup destroys them). Without IPVS on the node there is
// nothing to delete.
func deleteVirtualServers(dummy string, pick func(vss []kernel.DumpedVS, nodeIPs []netip.Addr, owned ownedFunc) []kernel.VirtualServer) (int, error) {
	x, err := linux.NewIPVS(10 * time.Second)
	if err != nil {
		return 0, nil
	}
	defer x.Close()
	vss, err := x.ListVirtualServers()
	if err != nil {
		return 0, nil // no ip_vs module: no virtual server at all
	}
	onDummy := map[netip.Addr]bool{}
	for _, x := range []*linux.Addresses{{}, {LocalRoutes: true}} { // either mode's Service IPs
		if addrs, err := x.ListAddresses(dummy); err == nil {
			for _, a := range addrs {
				onDummy[a] = true
			}
		}
		x.Close()
	}
	nodeIPs, err := linux.LocalAddresses(dummy)
	if err != nil {
		return 0, err
	}
	named := readOwnership(rulesBackends, linux.ModuleLoaded)
	owned := func(k kernel.VSKey, nodeIPs []netip.Addr, exclude []netip.Prefix) bool {
		return sets.Owns(k, onDummy[k.Address], nodeIPs, exclude, 30000, 32767, named)
	}
	var ops []kernel.VirtualServerOp
	for _, vs := range pick(vss, nodeIPs, owned) {
		ops = append(ops, kernel.VirtualServerOp{VS: vs, Kind: kernel.OpDelete})
	}
	n := 0
	var errs []error
	for _, err := range x.WriteVirtualServers(ops) { // one batch; an absent one is no error
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// chainsMinus returns a's chains that b does not list in the same table.
func chainsMinus(a, b map[string][]string) map[string][]string { return chainsWhere(a, b, false) }

// chainsIntersect returns a's chains that b lists in the same table.
func chainsIntersect(a, b map[string][]string) map[string][]string { return chainsWhere(a, b, true) }

// chainsUnion returns the chains of a and then those of b that a lacks, by table.
func chainsUnion(a, b map[string][]string) map[string][]string {
	out := map[string][]string{}
	for table, cs := range a {
		out[table] = slices.Clone(cs)
	}
	for table, cs := range chainsMinus(b, a) {
		out[table] = append(out[table], cs...)
	}
	return out
}

// chainsWhere returns a's chains, by table, that b lists in the same table (inB) or
// does not (!inB).
func chainsWhere(a, b map[string][]string, inB bool) map[string][]string {
	out := map[string][]string{}
	for table, cs := range a {
		for _, c := range cs {
			if slices.Contains(b[table], c) == inB {
				out[table] = append(out[table], c)
			}
		}
	}
	return out
}

// readOwnership reads the ownership sets of every rules backend whose sets module is
// loaded: a node that ran the nftables backend names its virtual servers on node IPs
// in its nftables table, and has no ipsets (nor, often, ip_set).
func readOwnership(rows []rulesBackend, loaded func(module string) bool) *sets.OwnershipEntries {
	named := sets.ReadOwnershipSets(nil)
	for _, b := range rows {
		if !loaded(b.setsModule) {
			continue
		}
		s := b.sets()
		named.Merge(sets.ReadOwnershipSets(s))
		if c, ok := s.(interface{ Close() }); ok {
			c.Close()
		}
	}
	return named
}

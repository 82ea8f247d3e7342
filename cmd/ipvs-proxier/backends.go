package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// rulesBackend is one row of the table of rules backends: all the daemon, plan,
// preflight, cleanup and the switch between backends know of one. Adding a backend is
// a renderer (a printer of kernel.Ruleset), an implementation of kernel.Sets and
// kernel.Rules in kernel/linux, and a row here with its proxier.RulesBackend.
type rulesBackend struct {
	// rules is the backend as the translation and plan see it: its name, its chains,
	// and how plan prints its sets and rules.
	rules *proxier.RulesBackend
	// help says what holds the sets and rules, for --rules-backend's help.
	help string
	// open opens its implementation of kernel.Sets and kernel.Rules.
	open func() (kernel.Sets, kernel.Rules)
	// modules are the kernel modules it uses, for preflight.
	modules linux.RulesModules
	// setsModule is the module without which the node holds none of its sets; sets
	// opens its sets alone, for cleanup to read the ownership sets before it removes
	// them (asking without the module loaded would load it).
	setsModule string
	sets       func() kernel.Sets
	// cleanup removes what it holds on the node: ours, and with scope.leftovers what
	// kube-proxy's modes left there.
	cleanup func(out io.Writer, scope cleanupScope) error
}

// rulesBackends is the table, the default first.
var rulesBackends = []rulesBackend{
	{rules: proxier.RulesIptables, help: "ipsets and iptables chains, as kube-proxy's IPVS mode",
		open:    func() (kernel.Sets, kernel.Rules) { return linux.OpenIptables(allChains()) },
		modules: linux.IptablesModules, cleanup: cleanupIptables,
		setsModule: "ip_set", sets: func() kernel.Sets { return &linux.IPSets{} }},
	{rules: proxier.RulesNftables, help: "one nftables table per family; no ipset, iptables or xtables needed",
		open:    func() (kernel.Sets, kernel.Rules) { return linux.OpenNftables(proxier.NftTable) },
		modules: linux.NftablesModules, cleanup: func(out io.Writer, _ cleanupScope) error { return cleanupNftables(out) },
		setsModule: "nf_tables", sets: func() kernel.Sets {
			// A fresh Nftables reads only the sets it made or found: Adopt finds ours
			// and makes none.
			n := linux.NewNftables(proxier.NftTable)
			n.Adopt(proxier.Sets([]kernel.Family{kernel.IPv4, kernel.IPv6}))
			return n
		}},
}

// cleanupScope says how much a rules backend's cleanup removes.
type cleanupScope struct {
	// leftovers: also what kube-proxy's iptables mode left (its chains beside ours).
	leftovers bool
	// keepShared leaves the chains kube-proxy's iptables mode also uses, for a rollback
	// with kube-proxy running.
	keepShared bool
	// quiet says nothing of a tool the node lacks: the switch between backends, where
	// the other backend's tools are often gone.
	quiet bool
}

// lookupRulesBackend returns the row named name; "" is proxier's default.
func lookupRulesBackend(name string) (rulesBackend, error) {
	if name == "" {
		name = proxier.Config{}.WithDefaults().RulesBackend.Name
	}
	var names []string
	for _, b := range rulesBackends {
		if b.rules.Name == name {
			return b, nil
		}
		names = append(names, b.rules.Name)
	}
	return rulesBackend{}, fmt.Errorf("rules backend %q: want %s", name, strings.Join(names, " or "))
}

// rulesBackendHelp is --rules-backend's help: each backend and what it holds.
func rulesBackendHelp() string {
	var each []string
	for _, b := range rulesBackends {
		each = append(each, b.rules.Name+" ("+b.help+")")
	}
	return "what holds the sets and rules beside IPVS: " + strings.Join(each, " or ")
}

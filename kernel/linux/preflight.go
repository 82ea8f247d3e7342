package linux

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Preflight checks what the daemon needs from the node before it programs anything.
type Preflight struct {
	// Root is the filesystem root (normally "/"); tests use a folder.
	Root string
	// Modprobe loads a module; nil means exec `modprobe`. Tests stub it.
	Modprobe func(name string) error
	// Rules are the modules of the rules backend the daemon runs (IptablesModules,
	// NftablesModules): only its own are loaded, so the nftables backend's node needs
	// none of ip_set, xt_set or any other xtables module.
	Rules RulesModules
}

// RulesModules are the kernel modules a rules backend uses, beside IPVS's.
type RulesModules struct {
	// Required are checked as IPVS's are (loaded, built in, or loaded now), and reported
	// missing.
	Required []string
	// OnUse are loaded when the node has them as modules, and never reported: the kernel
	// loads each itself when a rule first uses it, but only through the host's modprobe
	// (request_module); where it cannot (no modprobe at /proc/sys/kernel/modprobe), a
	// restore fails with ENOENT. A kernel that builds them in, or names them otherwise,
	// is not reported.
	OnUse []string
}

// The rules backends' modules: ipsets and the iptables set match; or nf_tables, with
// the expressions and chain types our table uses (nft_encode.go), for both families.
var (
	IptablesModules = RulesModules{Required: []string{"ip_set", "xt_set"}}
	NftablesModules = RulesModules{Required: []string{"nf_tables"}, OnUse: []string{"nft_chain_nat", "nft_ct",
		"nft_fib_ipv4", "nft_fib_ipv6", "nft_fib_inet", "nft_masq", "nft_nat", "nft_reject", "nft_reject_ipv4", "nft_reject_ipv6"}}
)

// PreflightReport lists what is missing and the fixes, for one clear message.
type PreflightReport struct {
	MissingModules []string
	Problems       []string
	Fixes          []string
	// NoIPVS names what shows the kernel has no IPVS after the modules were loaded
	// ("" when it has): without it there is nothing to program.
	NoIPVS string
}

// OK reports whether nothing is missing.
func (r PreflightReport) OK() bool { return len(r.MissingModules) == 0 && len(r.Problems) == 0 }

// String is the one message an operator reads.
func (r PreflightReport) String() string {
	if r.OK() {
		return "preflight: all kernel modules and settings present"
	}
	var b strings.Builder
	b.WriteString("preflight: ")
	var what []string
	if len(r.MissingModules) > 0 {
		what = append(what, "missing kernel modules "+strings.Join(r.MissingModules, ", "))
	}
	what = append(what, r.Problems...)
	b.WriteString(strings.Join(what, "; "))
	b.WriteString(". Fix: " + strings.Join(r.Fixes, "; "))
	return b.String()
}

// Check looks for the modules IPVS proxying uses (loaded, built in, or loadable — in
// which case it loads them), and for ip_forward and bridge-nf-call-iptables.
func (p Preflight) Check(schedulers []string) PreflightReport {
	root := p.Root
	if root == "" {
		root = "/"
	}
	modprobe := p.Modprobe
	if modprobe == nil {
		modprobe = func(name string) error { return command("modprobe", name).Run() }
	}
	release := strings.TrimSpace(readFile(filepath.Join(root, "proc/sys/kernel/osrelease")))
	loaded := lines(filepath.Join(root, "proc/modules"), func(l string) string { return strings.Fields(l + " ")[0] })
	builtin := lines(filepath.Join(root, "lib/modules", release, "modules.builtin"), moduleName)
	available := lines(filepath.Join(root, "lib/modules", release, "modules.dep"), func(l string) string { return moduleName(strings.SplitN(l, ":", 2)[0]) })

	mods := []string{"ip_vs"}
	for _, s := range schedulers {
		mods = append(mods, "ip_vs_"+s)
	}
	mods = append(append(mods, "nf_conntrack"), p.Rules.Required...)
	var r PreflightReport
	for _, m := range mods {
		if slices.Contains(loaded, m) || slices.Contains(builtin, m) {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, "sys/module", m)); err == nil {
			continue
		}
		if slices.Contains(available, m) && modprobe(m) == nil {
			continue
		}
		r.MissingModules = append(r.MissingModules, m)
	}
	for _, m := range p.Rules.OnUse {
		if !slices.Contains(loaded, m) && slices.Contains(available, m) {
			_ = modprobe(m)
		}
	}
	if len(r.MissingModules) > 0 {
		r.Fixes = append(r.Fixes, "modprobe -a "+strings.Join(r.MissingModules, " "),
			"list them in /etc/modules-load.d/ipvs-proxier.conf so they load at boot")
	}
	// IPVS registers /proc/sys/net/ipv4/vs when the module is in: a generic netlink
	// listing can still answer without it (nothing to list), and the sysctls the
	// daemon writes next would fail with a bare ENOENT.
	if _, err := os.Stat(filepath.Join(root, "proc/sys/net/ipv4/vs")); err != nil {
		r.NoIPVS = "/proc/sys/net/ipv4/vs is missing: the kernel has no IPVS (module ip_vs)"
		r.Problems = append(r.Problems, r.NoIPVS)
	}
	if v := strings.TrimSpace(readFile(filepath.Join(root, "proc/sys/net/ipv4/ip_forward"))); v != "1" {
		r.Problems = append(r.Problems, "net.ipv4.ip_forward is "+orUnknown(v)+" (ipvs-proxier sets it to 1)")
		r.Fixes = append(r.Fixes, "net.ipv4.ip_forward=1 in /etc/sysctl.d/90-ipvs-proxier.conf")
	}
	if v := strings.TrimSpace(readFile(filepath.Join(root, "proc/sys/net/bridge/bridge-nf-call-iptables"))); v != "1" {
		r.Problems = append(r.Problems, "net.bridge.bridge-nf-call-iptables is "+orUnknown(v)+" (bridged pod traffic bypasses iptables)")
		r.Fixes = append(r.Fixes, "modprobe br_netfilter and net.bridge.bridge-nf-call-iptables=1 in /etc/sysctl.d/90-ipvs-proxier.conf")
	}
	return r
}

// ModuleLoaded reports whether a kernel module is in the running kernel: loaded
// (/sys/module/NAME, /proc/modules) or built in (modules.builtin). A kernel without
// module support (no /proc/modules) counts as having it: nothing can be loaded there, so
// asking loads nothing. Cleanup asks before it talks to ipset or nftables, since a netlink
// request to either loads its module, and a node without it has nothing of ours there.
func ModuleLoaded(name string) bool {
	return moduleLoaded("/", name)
}

func moduleLoaded(root, name string) bool {
	if _, err := os.Stat(filepath.Join(root, "sys/module", name)); err == nil {
		return true
	}
	if _, err := os.Stat(filepath.Join(root, "proc/modules")); err != nil {
		return true
	}
	if slices.Contains(lines(filepath.Join(root, "proc/modules"), func(l string) string { return strings.Fields(l + " ")[0] }), name) {
		return true
	}
	release := strings.TrimSpace(readFile(filepath.Join(root, "proc/sys/kernel/osrelease")))
	return slices.Contains(lines(filepath.Join(root, "lib/modules", release, "modules.builtin"), moduleName), name)
}

func orUnknown(v string) string {
	if v == "" {
		return "unset"
	}
	return v
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// moduleName turns "kernel/net/netfilter/ipvs/ip_vs_rr.ko.xz" into "ip_vs_rr".
func moduleName(path string) string {
	base := filepath.Base(strings.TrimSpace(path))
	base, _, _ = strings.Cut(base, ".ko")
	return strings.ReplaceAll(base, "-", "_")
}

func lines(path string, key func(string) string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, key(l))
		}
	}
	return out
}

package linux

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// KubeProxyNftTable is the table kube-proxy's nftables mode keeps in each family (`ip
// kube-proxy`, `ip6 kube-proxy`: pkg/proxy/nftables, kubeProxyTable).
const KubeProxyNftTable = "kube-proxy"

// IptablesModeChains are the chains kube-proxy's iptables mode makes, by table
// (pkg/proxy/iptables/proxier.go), and IptablesModePrefixes the prefixes of its
// per-Service and per-endpoint chains. Neither it nor we remove them when a node switches
// to IPVS (in IPVS mode kube-proxy's platformCleanup, cmd/kube-proxy/app/server_linux.go,
// runs only the nftables cleanup), and the stale filter KUBE-SERVICES REJECTs
// Services that had no endpoints at the switch. KUBE-FIREWALL, KUBE-MARK-DROP and
// KUBE-KUBELET-CANARY are kubelet's and never listed.
var (
	IptablesModeChains = map[string][]string{
		"nat":    {"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", "KUBE-PROXY-CANARY"},
		"filter": {"KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-NODEPORTS", "KUBE-FORWARD", "KUBE-PROXY-FIREWALL", "KUBE-PROXY-CANARY"},
		"mangle": {"KUBE-PROXY-CANARY"},
	}
	IptablesModePrefixes = []string{"KUBE-SVC-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-SEP-", "KUBE-XLB-"}
)

// RemoveChains deletes the named chains of each table (and chains starting with one of
// prefixes, in any table) of the family, with the rules of other chains that jump to
// them. It is idempotent: chains that do not exist are skipped. One iptables-restore
// --noflush per table does it atomically: first the jumps are deleted, then every doomed
// chain is flushed (so they may reference each other), then deleted.
func (t *Iptables) RemoveChains(f kernel.Family, chains map[string][]string, prefixes []string) (removed int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	// One save of every table that exists: `-t TABLE` would instantiate a missing
	// legacy table just to find nothing in it.
	all, err := t.saveAll(f)
	if err != nil {
		return 0, err
	}
	for _, table := range []string{"nat", "filter", "mangle"} {
		doomed := func(c string) bool {
			return slices.Contains(chains[table], c) || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(c, p) })
		}
		lines := all[table]
		var present, deletes []string
		for _, line := range lines {
			switch {
			case strings.HasPrefix(line, ":"):
				if name, _, _ := strings.Cut(line[1:], " "); doomed(name) {
					present = append(present, name)
				}
			case strings.HasPrefix(line, "-A "):
				fields := strings.Fields(line)
				if !doomed(fields[1]) && slices.ContainsFunc(fields, doomed) && jumpsTo(fields, doomed) {
					deletes = append(deletes, "-D"+line[2:])
				}
			}
		}
		if len(present) == 0 && len(deletes) == 0 {
			continue
		}
		var b strings.Builder
		b.WriteString("*" + table + "\n")
		for _, d := range deletes {
			b.WriteString(d + "\n")
		}
		for _, c := range present {
			b.WriteString("-F " + c + "\n")
		}
		for _, c := range present {
			b.WriteString("-X " + c + "\n")
		}
		b.WriteString("COMMIT\n")
		cmd := command(t.bin(f, "-restore"), "-w", "5", "--noflush")
		cmd.Stdin = strings.NewReader(b.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w: %s", cmd.Path, table, err, out))
			continue
		}
		removed += len(present)
	}
	return removed, errors.Join(errs...)
}

func jumpsTo(fields []string, doomed func(string) bool) bool {
	for i := 0; i+1 < len(fields); i++ {
		if (fields[i] == "-j" || fields[i] == "-g") && doomed(fields[i+1]) {
			return true
		}
	}
	return false
}

// CheckDummy returns an error when dev exists and is not a dummy interface: what is
// on it is no Service's to clean up. A missing interface passes.
func CheckDummy(dev string) error {
	l, err := link(dev)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, ok := l.(*netlink.Dummy); !ok {
		return fmt.Errorf("%s is a %s interface: %w", dev, l.Type(), kernel.ErrNotDummy)
	}
	return nil
}

// DeleteDummy deletes the dummy interface, and with it every address on it. A missing
// interface is success.
func DeleteDummy(dev string) (bool, error) {
	l, err := link(dev)
	if errors.Is(err, kernel.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, ok := l.(*netlink.Dummy); !ok {
		return false, fmt.Errorf("%s is a %s, not a dummy interface; left alone", dev, l.Type())
	}
	return true, wrapErr("delete "+dev, netlink.LinkDel(l))
}

// HaveIptables reports whether an iptables save binary is installed; without one no
// chain of ours can have been made (we only ever make them with it).
func HaveIptables() bool {
	for _, b := range []string{"iptables-nft-save", "iptables-legacy-save", "iptables-save"} {
		if _, err := exec.LookPath(b); err == nil {
			return true
		}
	}
	return false
}

// DestroySets destroys the named ipsets; missing ones are skipped. A set still
// referenced by an iptables rule cannot be destroyed (EBUSY), so remove the chains first.
func DestroySets(names []string) (destroyed int, err error) {
	var errs []error
	for _, n := range names {
		// netlink's destroy reports success for a missing set, so look first.
		if _, err := netlink.IpsetList(n); err != nil {
			continue
		}
		if err := netlink.IpsetDestroy(n); err != nil {
			errs = append(errs, fmt.Errorf("destroy ipset %s: %w", n, err))
			continue
		}
		destroyed++
	}
	return destroyed, errors.Join(errs...)
}

// ChainsMatchingSets returns, by table, the family's chains with a rule that matches an
// ipset whose name starts with prefix. kube-proxy's iptables mode never matches ipsets,
// so a chain name both use still holds our rules exactly when it matches our sets.
func (t *Iptables) ChainsMatchingSets(f kernel.Family, prefix string) (map[string][]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string][]string{}
	all, err := t.saveAll(f)
	if err != nil {
		return nil, err
	}
	for _, table := range []string{"nat", "filter", "mangle"} {
		for _, line := range all[table] {
			fields := strings.Fields(line)
			if len(fields) < 2 || fields[0] != "-A" || slices.Contains(out[table], fields[1]) {
				continue
			}
			for i := 0; i+1 < len(fields); i++ {
				if fields[i] == "--match-set" && strings.HasPrefix(fields[i+1], prefix) {
					out[table] = append(out[table], fields[1])
					break
				}
			}
		}
	}
	return out, nil
}

package linux

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPreflight: loaded, built-in and loadable modules pass (loadable ones are loaded);
// missing ones and wrong settings give one message with the exact fixes.
func TestPreflight(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"proc/sys/kernel/osrelease":                  "6.1.0-57-amd64\n",
		"proc/modules":                               "ip_vs 1 0 - Live 0x0\nnf_conntrack 1 0 - Live 0x0\n",
		"lib/modules/6.1.0-57-amd64/modules.builtin": "kernel/net/netfilter/ipset/ip_set.ko\n",
		"lib/modules/6.1.0-57-amd64/modules.dep":     "kernel/net/netfilter/ipvs/ip_vs_rr.ko.xz: kernel/net/netfilter/ipvs/ip_vs.ko.xz\nkernel/net/netfilter/xt_set.ko.xz:\n",
		"proc/sys/net/ipv4/ip_forward":               "0\n",
	})
	var loadedByUs []string
	p := Preflight{Root: root, Rules: IptablesModules, Modprobe: func(m string) error {
		if m == "xt_set" {
			return errors.New("modprobe failed")
		}
		loadedByUs = append(loadedByUs, m)
		return nil
	}}
	r := p.Check([]string{"rr", "sed"})
	if !reflect.DeepEqual(loadedByUs, []string{"ip_vs_rr"}) {
		t.Errorf("modprobe called for %v", loadedByUs)
	}
	if !reflect.DeepEqual(r.MissingModules, []string{"ip_vs_sed", "xt_set"}) {
		t.Errorf("missing %v", r.MissingModules)
	}
	msg := r.String()
	for _, want := range []string{"modprobe -a ip_vs_sed xt_set", "/etc/modules-load.d/ipvs-proxier.conf",
		"net.ipv4.ip_forward is 0", "bridge-nf-call-iptables is unset", "net.bridge.bridge-nf-call-iptables=1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Count(msg, "\n") != 0 {
		t.Errorf("want one line, got:\n%s", msg)
	}
	// ip_vs "loaded" but no /proc/sys/net/ipv4/vs: the kernel cannot do IPVS.
	if r.NoIPVS == "" || !strings.Contains(msg, "the kernel has no IPVS") {
		t.Errorf("no /proc/sys/net/ipv4/vs, yet NoIPVS %q:\n%s", r.NoIPVS, msg)
	}
	writeFiles(t, root, map[string]string{"proc/sys/net/ipv4/vs/conntrack": "0\n"})
	if r := p.Check([]string{"rr"}); r.NoIPVS != "" {
		t.Errorf("with /proc/sys/net/ipv4/vs: NoIPVS %q", r.NoIPVS)
	}
}

// TestPreflightNftables: the nftables backend needs nf_tables and asks for nothing of
// ipset or xtables; it loads the expression modules the node has, reporting none.
func TestPreflightNftables(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"proc/sys/kernel/osrelease": "6.1.0-57-amd64\n",
		"proc/modules":              "ip_vs 1 0 - Live 0x0\nnf_conntrack 1 0 - Live 0x0\n",
		"lib/modules/6.1.0-57-amd64/modules.dep": "kernel/net/netfilter/nf_tables.ko.xz:\nkernel/net/ipv6/netfilter/nft_fib_ipv6.ko.xz:\n" +
			"kernel/net/netfilter/ipset/ip_set.ko.xz:\nkernel/net/netfilter/xt_set.ko.xz:\n",
		"proc/sys/net/ipv4/vs/conntrack": "0\n",
	})
	var loaded []string
	r := Preflight{Root: root, Rules: NftablesModules, Modprobe: func(m string) error { loaded = append(loaded, m); return nil }}.Check(nil)
	if !reflect.DeepEqual(loaded, []string{"nf_tables", "nft_fib_ipv6"}) {
		t.Errorf("modprobe called for %v, want nf_tables and nft_fib_ipv6 only", loaded)
	}
	if len(r.MissingModules) > 0 {
		t.Errorf("missing %v", r.MissingModules)
	}
	loaded = nil
	r = Preflight{Root: root, Rules: NftablesModules, Modprobe: func(m string) error { loaded = append(loaded, m); return errors.New("no") }}.Check(nil)
	if !reflect.DeepEqual(r.MissingModules, []string{"nf_tables"}) {
		t.Errorf("missing %v, want nf_tables only (the expression modules are not reported)", r.MissingModules)
	}
}

// TestModuleLoaded: /sys/module, /proc/modules and modules.builtin each say a module is
// in; with /proc/modules and no such line it is not; a kernel without /proc/modules
// (no module support) counts as having it.
func TestModuleLoaded(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"proc/sys/kernel/osrelease":                  "6.1.0-57-amd64\n",
		"proc/modules":                               "nf_tables 1 0 - Live 0x0\n",
		"lib/modules/6.1.0-57-amd64/modules.builtin": "kernel/net/netfilter/x_tables.ko\n",
		"sys/module/ip_vs/parameters/conn_tab_bits":  "12\n",
	})
	for name, want := range map[string]bool{"nf_tables": true, "x_tables": true, "ip_vs": true, "ip_set": false} {
		if got := moduleLoaded(root, name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if !moduleLoaded(t.TempDir(), "ip_set") {
		t.Error("no /proc/modules: want true")
	}
}

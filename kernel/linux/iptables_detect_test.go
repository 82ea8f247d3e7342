package linux

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/kerneltest"
)

// TestIptablesDetectCreatesNoTableReal: on a node with no iptables tables at all,
// detecting the flavour, and a save of either flavour, leave it with none: neither a
// legacy table (`iptables-legacy-save -t mangle` instantiates one) nor an nft one.
func TestIptablesDetectCreatesNoTableReal(t *testing.T) {
	kerneltest.RequireNetns(t)
	type result struct {
		mode, legacyBefore, legacyAfter, nftAfter string
		err                                       error
	}
	done := make(chan result)
	go func() {
		// A netns of its own, on a thread that is never unlocked: it ends with the
		// goroutine, and the commands it starts run in that netns.
		runtime.LockOSThread()
		var r result
		defer func() { done <- r }()
		if r.err = unix.Unshare(unix.CLONE_NEWNET); r.err != nil {
			return
		}
		r.legacyBefore = legacyTables()
		r.mode = DetectIptablesMode()
		for _, mode := range []string{"nft", "legacy"} {
			ipt := &Iptables{mode: mode, chains: map[string]bool{"KUBE-SERVICES": true}}
			for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
				if _, err := ipt.Save(f); err != nil {
					r.err = err
				}
			}
		}
		r.legacyAfter = legacyTables()
		for _, save := range []string{"iptables-nft-save", "ip6tables-nft-save"} {
			out, _ := command(save).Output()
			r.nftAfter += tableLines(string(out))
		}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.mode != "nft" {
		t.Errorf("mode %q on a node with no rules, want nft", r.mode)
	}
	if r.legacyAfter != r.legacyBefore {
		t.Errorf("legacy tables before %q, after detection and saves %q", r.legacyBefore, r.legacyAfter)
	}
	if r.nftAfter != "" {
		t.Errorf("nft tables after detection and saves: %q", r.nftAfter)
	}
}

// legacyTables lists the legacy iptables tables the calling thread's netns has.
func legacyTables() string {
	var names []string
	for _, f := range []string{"ip_tables_names", "ip6_tables_names"} {
		b, _ := os.ReadFile("/proc/thread-self/net/" + f)
		names = append(names, strings.Fields(string(b))...)
	}
	return strings.Join(names, " ")
}

func tableLines(save string) string {
	var out []string
	for _, l := range strings.Split(save, "\n") {
		if strings.HasPrefix(l, "*") {
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}

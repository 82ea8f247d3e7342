package linux

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// Iptables applies our chains with iptables-restore --noflush, so chains of other
// software are never touched, and ensures the jump rules from built-in chains with
// `iptables -C` / `-I`. It runs the iptables flavour (nft or legacy) the node uses.
type Iptables struct {
	mu     sync.Mutex
	mode   string // "nft" or "legacy"
	chains map[string]bool
}

// NewIptables detects the node's iptables flavour and returns a backend that owns the
// named chains.
func NewIptables(chains []string) *Iptables {
	m := map[string]bool{}
	for _, c := range chains {
		m[c] = true
	}
	return &Iptables{mode: DetectIptablesMode(), chains: m}
}

// Mode returns "nft" or "legacy".
func (t *Iptables) Mode() string { return t.mode }

// DetectIptablesMode picks the flavour the node uses, as kube-proxy's iptables-wrapper
// does: the one where kubelet made its KUBE-IPTABLES-HINT (or KUBE-KUBELET-CANARY) chain
// in the mangle table; failing that, the one with more rules. With neither, nft.
func DetectIptablesMode() string {
	for _, mode := range []string{"nft", "legacy"} {
		out, err := command("iptables-"+mode+"-save", "-t", "mangle").Output()
		if err == nil && (bytes.Contains(out, []byte(":KUBE-IPTABLES-HINT")) || bytes.Contains(out, []byte(":KUBE-KUBELET-CANARY"))) {
			return mode
		}
	}
	count := func(mode string) int {
		out, err := command("iptables-" + mode + "-save").Output()
		if err != nil {
			return -1
		}
		return bytes.Count(out, []byte("\n-A "))
	}
	legacy, nft := count("legacy"), count("nft")
	if legacy > nft {
		return "legacy"
	}
	return "nft"
}

func (t *Iptables) bin(f kernel.Family, tool string) string {
	base := "iptables"
	if f == kernel.IPv6 {
		base = "ip6tables"
	}
	return base + "-" + t.mode + tool
}

// Restore implements kernel.Iptables.
func (t *Iptables) Restore(f kernel.Family, rules string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var body strings.Builder
	type jump struct{ table, chain, rule string }
	var jumps []jump
	table := ""
	for _, line := range strings.Split(rules, "\n") {
		if strings.HasPrefix(line, "*") {
			table = line[1:]
		}
		if chain, rule, ok := strings.Cut(strings.TrimPrefix(line, "-A "), " "); ok && strings.HasPrefix(line, "-A ") && !t.chains[chain] {
			jumps = append(jumps, jump{table, chain, rule})
			continue
		}
		body.WriteString(line + "\n")
	}
	cmd := command(t.bin(f, "-restore"), "-w", "5", "--noflush")
	cmd.Stdin = strings.NewReader(body.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", cmd.Path, err, out)
	}
	for _, j := range jumps {
		args := append([]string{"-w", "5", "-t", j.table}, splitRule(j.rule)...)
		check := command(t.bin(f, ""), append([]string{"-C", j.chain}, args...)...)
		if check.Run() == nil {
			continue
		}
		ins := command(t.bin(f, ""), append([]string{"-I", j.chain, "1"}, args...)...)
		if out, err := ins.CombinedOutput(); err != nil {
			return fmt.Errorf("insert jump in %s/%s: %w: %s", j.table, j.chain, err, out)
		}
	}
	return nil
}

// splitRule splits a rule at spaces, keeping double-quoted words whole.
func splitRule(rule string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range rule {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// Save implements kernel.Iptables: our chains and the jumps to them, per table, in the
// kernel's canonical form, without counters.
func (t *Iptables) Save(f kernel.Family) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for _, table := range []string{"nat", "filter"} {
		lines, err := t.saveTable(f, table)
		if err != nil {
			return "", err
		}
		b.WriteString("*" + table + "\n")
		for _, line := range lines {
			switch {
			case strings.HasPrefix(line, ":"):
				name, _, _ := strings.Cut(line[1:], " ")
				if t.chains[name] {
					b.WriteString(":" + name + "\n")
				}
			case strings.HasPrefix(line, "-A "):
				fields := strings.Fields(line)
				if t.chains[fields[1]] || slices.ContainsFunc(fields, func(w string) bool { return t.chains[w] }) && hasJumpTo(fields, t.chains) {
					b.WriteString(line + "\n")
				}
			}
		}
		b.WriteString("COMMIT\n")
	}
	return b.String(), nil
}

// saveTable returns the lines of iptables-save for one table of the family.
func (t *Iptables) saveTable(f kernel.Family, table string) ([]string, error) {
	out, err := command(t.bin(f, "-save"), "-t", table).Output()
	if err != nil {
		return nil, fmt.Errorf("%s -t %s: %w", t.bin(f, "-save"), table, err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

func hasJumpTo(fields []string, chains map[string]bool) bool {
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] == "-j" && chains[fields[i+1]] {
			return true
		}
	}
	return false
}

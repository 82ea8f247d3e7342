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
// software are never touched, and adds the jump rules from built-in chains that are
// missing in the same transaction. It runs the iptables flavour (nft or legacy) the node
// uses.
//
// Every iptables command is a process, and under load (a node kube-proxy just left, an
// emulated VM) one takes a second or more: a restore costs two (one save, one restore),
// a save one, where checking each of the 11 jumps with its own `iptables -C` made the
// first sync of a takeover spend 71 s in iptables.
type Iptables struct {
	mu     sync.Mutex
	mode   string // "nft" or "legacy"
	chains map[string]bool
	// saved is each family's last iptables-save with the nf_tables generation read just
	// before it (nft mode only): while the generation stands, the ruleset is what that
	// save printed, and saveAll answers from it without a process. The periodic full
	// sync's drift check is one save per family every syncPeriod; without those
	// processes the mean periodic full sync at 1,000 Services in the emulated VM went
	// from 0.55 to 0.33 s and idle CPU from 1.46 to 1.22 s/min (`make bench-scale`,
	// two runs).
	saved map[kernel.Family]savedTables
	// saves counts iptables-save processes run (tests).
	saves int
}

// savedTables is one family's save, by table, and the generation it was taken at.
type savedTables struct {
	gen    uint32
	tables map[string][]string
}

// NewIptables detects the node's iptables flavour and returns a backend that owns the
// named chains.
func NewIptables(chains []string) *Iptables {
	m := map[string]bool{}
	for _, c := range chains {
		m[c] = true
	}
	return &Iptables{mode: DetectIptablesMode(), chains: m, saved: map[kernel.Family]savedTables{}}
}

// Mode returns "nft" or "legacy".
func (t *Iptables) Mode() string { return t.mode }

// DetectIptablesMode picks the flavour the node uses, as kube-proxy's iptables-wrapper
// does (kubernetes-sigs/iptables-wrappers): the one where kubelet made its
// KUBE-IPTABLES-HINT (or KUBE-KUBELET-CANARY) chain in the mangle table; failing that,
// the one with more rules. With neither, nft. It creates no table: nft is read with
// `-t mangle`, which reads the ruleset only, but legacy only with a whole save, since
// `iptables-legacy-save -t mangle` makes the kernel instantiate the legacy mangle table
// (and nft's tools then warn on every run that legacy tables are present).
func DetectIptablesMode() string {
	if out, err := command("iptables-nft-save", "-t", "mangle").Output(); err == nil && hasKubeletHint(out) {
		return "nft"
	}
	legacy, lerr := command("iptables-legacy-save").Output()
	if lerr == nil && hasKubeletHint(legacy) {
		return "legacy"
	}
	nft, nerr := command("iptables-nft-save").Output()
	if lerr == nil && (nerr != nil || countRules(legacy) > countRules(nft)) {
		return "legacy"
	}
	return "nft"
}

// hasKubeletHint reports whether a save holds the chain kubelet makes in the mangle
// table of the flavour it uses.
func hasKubeletHint(save []byte) bool {
	return bytes.Contains(save, []byte("\n:KUBE-IPTABLES-HINT ")) || bytes.Contains(save, []byte("\n:KUBE-KUBELET-CANARY "))
}

func countRules(save []byte) int { return bytes.Count(save, []byte("\n-A ")) }

func (t *Iptables) bin(f kernel.Family, tool string) string {
	base := "iptables"
	if f == kernel.IPv6 {
		base = "ip6tables"
	}
	return base + "-" + t.mode + tool
}

// A jump is a rule of ours in a chain that is not ours (a built-in chain).
type jump struct{ table, chain, rule string }

// Restore implements kernel.Rules: one iptables-save to see which jumps exist, then
// one iptables-restore --noflush with our chains and an `-I CHAIN 1` line for each
// missing jump, so the chains and the jumps into them appear together.
func (t *Iptables) Restore(f kernel.Family, rules *kernel.Ruleset) error {
	return t.restoreText(f, rules.Iptables())
}

// restoreText is Restore of iptables-restore input.
func (t *Iptables) restoreText(f kernel.Family, rules string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var chainLines []string
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
		chainLines = append(chainLines, line)
	}
	cur, err := t.saveAll(f)
	if err != nil {
		return err
	}
	inserts := map[string][]string{}
	for _, j := range jumps {
		if !t.jumpPresent(f, j, cur[j.table]) {
			inserts[j.table] = append(inserts[j.table], "-I "+j.chain+" 1 "+j.rule)
		}
	}
	var body strings.Builder
	table = ""
	for _, line := range chainLines {
		if strings.HasPrefix(line, "*") {
			table = line[1:]
		}
		if line == "COMMIT" {
			for _, ins := range inserts[table] {
				body.WriteString(ins + "\n")
			}
		}
		body.WriteString(line + "\n")
	}
	cmd := command(t.bin(f, "-restore"), "-w", "5", "--noflush")
	cmd.Stdin = strings.NewReader(body.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", cmd.Path, err, out)
	}
	return nil
}

// jumpPresent reports whether the jump is in the table, whose saved lines are saved: a
// line equal to it is (our rendered jumps are in iptables-save's canonical form, which
// TestIptablesReal checks on the real tools); no rule of its chain jumping to its target
// means it is not; anything else (a rule of another form to the same target) is asked
// of iptables -C.
func (t *Iptables) jumpPresent(f kernel.Family, j jump, saved []string) bool {
	if slices.Contains(saved, "-A "+j.chain+" "+j.rule) {
		return true
	}
	if _, after, ok := strings.Cut(j.rule, "-j "); ok {
		target, _, _ := strings.Cut(after, " ")
		if !slices.ContainsFunc(saved, func(l string) bool {
			return strings.HasPrefix(l, "-A "+j.chain+" ") && strings.Contains(l, " -j "+target)
		}) {
			return false
		}
	}
	args := append([]string{"-w", "5", "-t", j.table, "-C", j.chain}, splitRule(j.rule)...)
	return command(t.bin(f, ""), args...).Run() == nil
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

// Save implements kernel.Rules: our chains and the jumps to them, per table, in the
// kernel's canonical form, without counters.
func (t *Iptables) Save(f kernel.Family) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tables, err := t.saveAll(f)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, table := range []string{"nat", "filter"} {
		b.WriteString("*" + table + "\n")
		for _, line := range tables[table] {
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

// saveAll runs iptables-save for the family once, without -t (which would instantiate
// a legacy table that does not exist), and returns each table's lines; in nft mode, when
// the ruleset's generation has not moved since the last save, that save's lines. The
// lines are shared: callers only read them.
func (t *Iptables) saveAll(f kernel.Family) (map[string][]string, error) {
	gen, genErr := uint32(0), error(nil)
	if t.mode == "nft" {
		gen, genErr = nftGeneration()
	}
	if last, ok := t.saved[f]; ok && t.mode == "nft" && genErr == nil && last.gen == gen {
		return last.tables, nil
	}
	// The generation is read before the save: a change between the two moves it again,
	// so the next call saves again rather than trusting a save that missed it.
	delete(t.saved, f)
	t.saves++
	out, err := command(t.bin(f, "-save")).Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.bin(f, "-save"), err)
	}
	tables := map[string][]string{}
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case line == "COMMIT":
			table = ""
		case table != "" && line != "" && !strings.HasPrefix(line, "#"):
			tables[table] = append(tables[table], line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if t.mode == "nft" && genErr == nil && t.saved != nil {
		t.saved[f] = savedTables{gen, tables}
	}
	return tables, nil
}

func hasJumpTo(fields []string, chains map[string]bool) bool {
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] == "-j" && chains[fields[i+1]] {
			return true
		}
	}
	return false
}

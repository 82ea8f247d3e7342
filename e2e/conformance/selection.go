package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Selection is which upstream specs run: the focus picks the files that exercise a
// service proxy, each skip rule removes the specs that cannot run on this cluster, with
// the reason the report prints beside each one.
type Selection struct {
	Focus []*regexp.Regexp
	Skips []Rule
	// Notes explain a result in the report (why a test fails on this cluster).
	Notes []Rule
	// Differences name the row of docs/differences.md a test's expectation meets: a
	// test kube-proxy passes and ipvs-proxier fails for that reason is no regression.
	Differences []Rule
}

// Rule is a pattern on spec names with its text (a skip's reason, a note).
type Rule struct {
	Pattern *regexp.Regexp
	Text    string
	// Shapes are the cluster shapes the rule holds on (`skip[ipv4,ipv6-first]`); none:
	// every shape.
	Shapes []string
}

// ParseSelection reads selection.txt: blank lines and # comments aside, each line is
// `focus REGEX`, `skip REGEX -- REASON` (the reason is required: every skipped test
// says why), `note REGEX -- TEXT` or `difference REGEX -- ROW`. A skip, note or
// difference may name the cluster shapes it holds on: `skip[ipv4,ipv6-first] ...`.
func ParseSelection(text []byte) (*Selection, error) {
	s := &Selection{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kind, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		var shapes []string
		if k, list, ok := strings.Cut(kind, "["); ok && strings.HasSuffix(list, "]") && k != "focus" {
			kind, shapes = k, strings.Split(strings.TrimSuffix(list, "]"), ",")
			for _, sh := range shapes {
				if _, err := LookupShape(sh); err != nil {
					return nil, fmt.Errorf("selection line %d: %v", n, err)
				}
			}
		}
		switch kind {
		case "focus":
			re, err := regexp.Compile(rest)
			if err != nil || rest == "" {
				return nil, fmt.Errorf("selection line %d: focus %q: %v", n, rest, err)
			}
			s.Focus = append(s.Focus, re)
		case "skip", "note", "difference":
			pat, text, ok := strings.Cut(rest, " -- ")
			pat, text = strings.TrimSpace(pat), strings.TrimSpace(text)
			if !ok || pat == "" || text == "" {
				return nil, fmt.Errorf("selection line %d: want `%s REGEX -- TEXT`", n, kind)
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				return nil, fmt.Errorf("selection line %d: %v", n, err)
			}
			rule := Rule{Pattern: re, Text: text, Shapes: shapes}
			switch kind {
			case "skip":
				s.Skips = append(s.Skips, rule)
			case "note":
				s.Notes = append(s.Notes, rule)
			default:
				s.Differences = append(s.Differences, rule)
			}
		default:
			return nil, fmt.Errorf("selection line %d: %q is not focus, skip, note or difference", n, kind)
		}
	}
	if len(s.Focus) == 0 {
		return nil, fmt.Errorf("selection: no focus")
	}
	return s, sc.Err()
}

// ForShape is the selection on one cluster shape: the rules that hold on it.
func (s *Selection) ForShape(shape string) *Selection {
	keep := func(rules []Rule) []Rule {
		var out []Rule
		for _, r := range rules {
			if len(r.Shapes) == 0 || slices.Contains(r.Shapes, shape) {
				out = append(out, r)
			}
		}
		return out
	}
	return &Selection{Focus: s.Focus, Skips: keep(s.Skips), Notes: keep(s.Notes), Differences: keep(s.Differences)}
}

// FocusRegex and SkipRegex are the e2e.test --ginkgo.focus and --ginkgo.skip values.
func (s *Selection) FocusRegex() string { return join(s.Focus) }

// SkipRegex is the --ginkgo.skip value (empty when there are no skips).
func (s *Selection) SkipRegex() string {
	res := make([]*regexp.Regexp, len(s.Skips))
	for i, sk := range s.Skips {
		res[i] = sk.Pattern
	}
	return join(res)
}

func join(res []*regexp.Regexp) string {
	parts := make([]string, len(res))
	for i, re := range res {
		parts[i] = "(" + re.String() + ")"
	}
	return strings.Join(parts, "|")
}

// Classify says whether a spec (its full text) is in the candidate set (the focus
// matches), and if so the reason it is skipped ("" when it runs).
func (s *Selection) Classify(spec string) (candidate bool, skipReason string) {
	for _, re := range s.Focus {
		if re.MatchString(spec) {
			candidate = true
			break
		}
	}
	if !candidate {
		return false, ""
	}
	return true, match(s.Skips, spec)
}

// Note is the note for a spec ("" when none).
func (s *Selection) Note(spec string) string { return match(s.Notes, spec) }

// Difference is the Differences row a spec meets ("" when none).
func (s *Selection) Difference(spec string) string { return match(s.Differences, spec) }

// match is the text of the first rule whose pattern matches spec.
func match(rules []Rule, spec string) string {
	for _, r := range rules {
		if r.Pattern.MatchString(spec) {
			return r.Text
		}
	}
	return ""
}

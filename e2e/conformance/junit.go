package conformance

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"
)

// Outcome is a spec's result in the report: pass, fail or skip.
type Outcome string

// The outcomes.
const (
	Pass Outcome = "pass"
	Fail Outcome = "fail"
	Skip Outcome = "skip"
)

// Result is one spec's outcome in one run, with the first line of its failure.
type Result struct {
	Outcome Outcome
	Message string
	Seconds float64
}

type junitReport struct {
	Suites []struct {
		Time  float64 `xml:"time,attr"`
		Cases []struct {
			Name    string  `xml:"name,attr"`
			Status  string  `xml:"status,attr"`
			Time    float64 `xml:"time,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Body    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// SpecName is a spec's text as the report keys it: ginkgo's leaf-node prefix ("[It] ")
// and its label list (" [sig-network, Conformance]", which repeats the text's tags)
// dropped, runs of spaces made one.
func SpecName(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "[It] ")
	if i := strings.LastIndex(s, " ["); i >= 0 && strings.HasSuffix(s, "]") && strings.Contains(s[i:], "sig-") {
		s = s[:i]
	}
	return strings.Join(strings.Fields(s), " ")
}

// ParseJUnit reads a ginkgo JUnit report (e2e.test --ginkgo.junit-report) into results
// by spec name; the suite's setup and teardown nodes are left out.
func ParseJUnit(data []byte) (map[string]Result, error) {
	var r junitReport
	if err := xml.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("junit: %w", err)
	}
	out := map[string]Result{}
	for _, s := range r.Suites {
		for _, c := range s.Cases {
			if !strings.HasPrefix(strings.TrimSpace(c.Name), "[It] ") {
				continue
			}
			res := Result{Seconds: c.Time}
			switch {
			case c.Status == "passed":
				res.Outcome = Pass
			case c.Status == "skipped" || c.Status == "pending" || (c.Status == "" && c.Skipped != nil):
				res.Outcome = Skip
				if c.Skipped != nil {
					res.Message = firstLine(c.Skipped.Message)
				}
			default:
				res.Outcome = Fail
				switch {
				case c.Failure != nil && c.Failure.Message != "":
					res.Message = firstLine(c.Failure.Message)
				case c.Failure != nil:
					res.Message = firstLine(c.Failure.Body)
				case c.Error != nil:
					res.Message = firstLine(c.Error.Message)
				default:
					res.Message = c.Status
				}
			}
			out[SpecName(c.Name)] = res
		}
	}
	return out, nil
}

// ReadJUnit is ParseJUnit of a file.
func ReadJUnit(path string) (map[string]Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseJUnit(b)
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 300 {
				l = l[:300] + "…"
			}
			return l
		}
	}
	return ""
}

// MergeResults adds a part's results to a run's: a spec the part filtered out (skipped)
// does not hide its result from another part.
func MergeResults(into, part map[string]Result) {
	for k, v := range part {
		if _, seen := into[k]; seen && v.Outcome == Skip {
			continue
		}
		into[k] = v
	}
}

// JUnitSeconds is the time the report's suites took, summed.
func JUnitSeconds(data []byte) (float64, error) {
	var r junitReport
	if err := xml.Unmarshal(data, &r); err != nil {
		return 0, fmt.Errorf("junit: %w", err)
	}
	var t float64
	for _, s := range r.Suites {
		t += s.Time
	}
	return t, nil
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/spf13/pflag"
)

// runStatus prints a human summary of the local daemon's /status.
func runStatus(args []string, out io.Writer) error {
	fs := pflag.NewFlagSet("status", pflag.ContinueOnError)
	addr := fs.String("address", "127.0.0.1:10249", "the daemon's --metrics-bind-address, where /status is served")
	raw := fs.Bool("json", false, "print the /status JSON (compacted; characters a terminal acts on escaped as \\uXXXX)")
	fs.SetOutput(out)
	fs.Usage = func() {
		commandUsage(out, fs, "ipvs-proxier status [--address HOST:PORT] [--json]",
			"Summarises the local daemon's /status (on its metrics listener): sync state, object counts, conntrack\n"+
				"pressure, the drain queue, the API server, the busiest virtual servers.",
			"  kubectl -n kube-system exec ds/ipvs-proxier -- ipvs-proxier status")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + *addr + "/status")
	if err != nil {
		return fmt.Errorf("is the daemon running? %w", err)
	}
	defer resp.Body.Close()
	body, err := readStatus(resp.Body, maxStatusBytes)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /status: %s", printable(resp.Status))
	}
	if *raw {
		js, err := printableJSON(body)
		if err != nil {
			return err
		}
		_, err = out.Write(js)
		return err
	}
	var r statusReport
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("decode /status: %w", err)
	}
	renderStatus(out, r, time.Now())
	return nil
}

// maxStatusBytes bounds the /status body status reads. The daemon's body does not grow
// with the cluster: counts, ten busiest virtual servers (reconcile.StatusBusiest), the
// setup problems and errors of a few lines, the last sync error cut at 16 KiB
// (maxLastErrorBytes): a few KB, at most some 100 KiB with every string escaped in JSON.
// Past the bound it is not the daemon answering.
const maxStatusBytes = 16 << 20

// readStatus reads the body up to limit bytes and fails past it, before holding more.
func readStatus(r io.Reader, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read /status: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("the /status response is larger than %d MiB: refused (is --address the daemon's metrics listener?)", limit>>20)
	}
	return body, nil
}

// printable returns s with every character a terminal could act on escaped as in Go
// source (\n, \x1b, \u202e): control characters (C0, DEL, C1), format characters
// (bidirectional overrides, zero-width), invalid UTF-8. A string from the server then
// never starts a line of the output or moves the cursor; only the printer ends lines.
func printable(s string) string {
	clean := true
	for _, c := range s {
		if c == utf8.RuneError || !strconv.IsPrint(c) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case strconv.IsPrint(c):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRuneToASCII(c)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// printableJSON returns body compacted, one line, with what printable would escape
// written as JSON's \uXXXX escapes: the same JSON, safe on a terminal. Body that is not
// JSON is an error. In valid JSON such characters can only be inside strings (between
// tokens there is only ASCII whitespace, which compacting removes).
func printableJSON(body []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, body); err != nil {
		return nil, fmt.Errorf("decode /status: %w", err)
	}
	out := make([]byte, 0, buf.Len()+1)
	for b := buf.Bytes(); len(b) > 0; {
		c, n := utf8.DecodeRune(b)
		switch {
		case c == utf8.RuneError && n <= 1:
			out = append(out, `\ufffd`...)
		case strconv.IsPrint(c):
			out = append(out, b[:n]...)
		default:
			for _, u := range utf16.Encode([]rune{c}) {
				out = fmt.Appendf(out, `\u%04x`, u)
			}
		}
		b = b[n:]
	}
	return append(out, '\n'), nil
}

// renderStatus prints the report for a person. Every string from the server goes
// through printable.
func renderStatus(w io.Writer, r statusReport, now time.Time) {
	health := "healthy"
	if !r.Sync.Healthy {
		health = "UNHEALTHY (changes wait longer than 2 x syncPeriod)"
	}
	ready := "ready"
	if !r.Sync.Ready {
		why := r.Sync.NotReady
		if why == "" {
			why = "no successful sync yet"
		}
		ready = "NOT READY (" + printable(why) + ")"
	}
	kind := "partial"
	if r.Sync.LastFull {
		kind = "full"
	}
	fmt.Fprintf(w, "ipvs-proxier %s on node %s\n", printable(r.Version), printable(r.Node))
	if r.RulesBackend != "" {
		fmt.Fprintf(w, "rules:      %s\n", printable(r.RulesBackend))
	}
	fmt.Fprintf(w, "sync:       %s, %s; last sync %s ago (%s, %s), %d syncs\n", health, ready,
		ago(now, r.Sync.LastSync), kind, time.Duration(r.Sync.LastDurationSec*float64(time.Second)).Round(time.Microsecond), r.Sync.Syncs)
	for _, p := range r.SetupProblems {
		fmt.Fprintf(w, "setup:      %s\n", printable(p))
	}
	if r.Sync.LastError != "" {
		first, _, _ := strings.Cut(r.Sync.LastError, "\n")
		fmt.Fprintf(w, "last error: %s", printable(first))
		if r.Sync.LastErrorLines > 1 {
			fmt.Fprintf(w, " (and %d more; --json, or the daemon's log)", r.Sync.LastErrorLines-1)
		}
		fmt.Fprintln(w)
	}
	if a := r.APIServer; a.Server != "" {
		api := "reachable"
		if !a.Reachable {
			api = fmt.Sprintf("UNREACHABLE for %s: %s", ago(now, a.Since), printable(a.Error))
		}
		fmt.Fprintf(w, "apiserver:  %s %s\n", printable(a.Server), api)
	}
	c := r.Counts
	fmt.Fprintf(w, "programmed: %d services, %d virtual servers, %d real servers, %d ipset entries, %d addresses\n",
		c.Services, c.VirtualServers, c.RealServers, c.SetEntries, c.Addresses)
	fmt.Fprintf(w, "draining:   %d real servers; %d healthCheckNodePorts open\n", r.Draining, r.HealthCheckNodePorts)
	ct := r.Conntrack
	state := "ok"
	if ct.Pressure {
		state = fmt.Sprintf("PRESSURE since %s; raise nf_conntrack_max to %d", ct.Since.Format(time.RFC3339), ct.Suggest)
	}
	if ct.Err != "" {
		state = "unreadable: " + printable(ct.Err)
	}
	fmt.Fprintf(w, "conntrack:  %s %5.1f%%  %d / %d entries  %s\n", bar(ct.Usage, 30), 100*ct.Usage, ct.Entries, ct.Max, state)
	fmt.Fprintf(w, "            drop %d, early_drop %d, insert_failed %d (since boot)\n", ct.Drop, ct.EarlyDrop, ct.InsertFailed)
	if len(r.TopVirtualServers) == 0 {
		return
	}
	fmt.Fprintln(w, "\ntop virtual servers by connections:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CONNECTIONS\tBYTES IN\tBYTES OUT\tVIRTUAL SERVER\tSERVICE")
	for _, v := range r.TopVirtualServers {
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%s\t%s\n", v.Connections, v.BytesIn, v.BytesOut, printable(v.VirtualServer), printable(v.Service))
	}
	_ = tw.Flush()
}

// bar draws ratio (0..1) as a bar of width cells.
func bar(ratio float64, width int) string {
	n := int(ratio*float64(width) + 0.5)
	n = max(0, min(n, width))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return now.Sub(t).Round(time.Second).String()
}

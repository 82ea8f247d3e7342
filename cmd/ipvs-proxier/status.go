package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
)

// runStatus prints a human summary of the local daemon's /status.
func runStatus(args []string, out io.Writer) error {
	fs := pflag.NewFlagSet("status", pflag.ContinueOnError)
	addr := fs.String("address", "127.0.0.1:10249", "the daemon's --metrics-bind-address, where /status is served")
	raw := fs.Bool("json", false, "print the /status JSON as it is")
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
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /status: %s", resp.Status)
	}
	if *raw {
		_, err = out.Write(body)
		return err
	}
	var r statusReport
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("decode /status: %w", err)
	}
	renderStatus(out, r, time.Now())
	return nil
}

// renderStatus prints the report for a person.
func renderStatus(w io.Writer, r statusReport, now time.Time) {
	health := "healthy"
	if !r.Sync.Healthy {
		health = "UNHEALTHY (changes wait longer than 2 x syncPeriod)"
	}
	ready := "ready"
	if !r.Sync.Ready {
		ready = "not ready (no successful sync yet)"
	}
	kind := "partial"
	if r.Sync.LastFull {
		kind = "full"
	}
	fmt.Fprintf(w, "ipvs-proxier %s on node %s\n", r.Version, r.Node)
	if r.RulesBackend != "" {
		fmt.Fprintf(w, "rules:      %s\n", r.RulesBackend)
	}
	fmt.Fprintf(w, "sync:       %s, %s; last sync %s ago (%s, %s), %d syncs\n", health, ready,
		ago(now, r.Sync.LastSync), kind, time.Duration(r.Sync.LastDurationSec*float64(time.Second)).Round(time.Microsecond), r.Sync.Syncs)
	if r.Sync.LastError != "" {
		fmt.Fprintf(w, "last error: %s\n", r.Sync.LastError)
	}
	if a := r.APIServer; a.Server != "" {
		api := "reachable"
		if !a.Reachable {
			api = fmt.Sprintf("UNREACHABLE for %s: %s", ago(now, a.Since), a.Error)
		}
		fmt.Fprintf(w, "apiserver:  %s %s\n", a.Server, api)
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
		state = "unreadable: " + ct.Err
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
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%s\t%s\n", v.Connections, v.BytesIn, v.BytesOut, v.VirtualServer, v.Service)
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

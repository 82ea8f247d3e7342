package main

import (
	"strings"
	"time"
)

// zeroWeight lists the real servers at weight 0 in `ipvsadm -Ln` output, "VS -> RS".
func zeroWeight(ipvsadm string) []string {
	var out []string
	vs := ""
	for _, l := range strings.Split(ipvsadm, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && (f[0] == "TCP" || f[0] == "UDP" || f[0] == "SCTP"):
			vs = f[0] + " " + f[1]
		case len(f) >= 4 && f[0] == "->" && f[1] != "RemoteAddress:Port" && f[3] == "0":
			out = append(out, vs+" -> "+f[1])
		}
	}
	return out
}

// drainWatch follows the real servers at weight 0 across scans of the IPVS table: how
// long the longest stayed there without a break (seen in every scan since its first).
type drainWatch struct {
	since   map[string]time.Time
	longest time.Duration
	which   string
}

// observe records one scan at time at.
func (d *drainWatch) observe(at time.Time, zero []string) {
	next := map[string]time.Time{}
	for _, k := range zero {
		first, ok := d.since[k]
		if !ok {
			first = at
		}
		next[k] = first
		if age := at.Sub(first); age > d.longest {
			d.longest, d.which = age, k
		}
	}
	d.since = next
}

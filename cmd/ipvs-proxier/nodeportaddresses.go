package main

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// nodePortKeywords are kube-proxy's nodePortAddresses keywords and the CIDRs each stands
// for (cmd/kube-proxy/app/server.go, expandNodePortAddressKeywords); "primary" is the
// Node's primary IPs, which the syncer reads from the Node (source.NodeOptions).
var nodePortKeywords = map[string][]netip.Prefix{
	"primary":   nil,
	"all":       {netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")},
	"localhost": {netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
}

// nodePortPrefixes parses --nodeport-addresses (nodePortAddresses): CIDRs and
// kube-proxy's keywords, each keyword at most once, as kube-proxy's validation allows
// (pkg/proxy/apis/config/validation, validateKubeProxyNodePortAddress). "primary" is
// recorded in r; "localhost" adds a warning to r: kube-proxy's IPVS mode skips loopback
// node IPs (pkg/proxy/ipvs/proxier.go), so it opens no NodePort and only names both
// families, which narrows each to the list's other entries.
func (o *options) nodePortPrefixes(r *resolved) ([]netip.Prefix, error) {
	var cidrs, seen []string
	var out []netip.Prefix
	for _, s := range o.nodePortAddresses {
		s = strings.TrimSpace(s)
		expanded, keyword := nodePortKeywords[s]
		if !keyword {
			cidrs = append(cidrs, s)
			continue
		}
		if slices.Contains(seen, s) {
			return nil, fmt.Errorf("%s: %q: Duplicate value", o.origin("nodeport-addresses"), s)
		}
		seen = append(seen, s)
		switch s {
		case "primary":
			r.primaryNodePorts = true
		case "localhost":
			r.warnings = append(r.warnings, o.origin("nodeport-addresses")+
				": localhost serves no NodePort in IPVS mode (as kube-proxy's IPVS mode); it only keeps each family to the other entries")
		}
		out = append(out, expanded...)
	}
	parsed, err := o.parsePrefixes("nodeport-addresses", cidrs)
	return append(parsed, out...), err
}

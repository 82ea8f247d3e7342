package main

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// kube-proxy's nftables names (kubernetes pkg/proxy/nftables/proxier.go, v1.37).
const (
	kpTable            = "kube-proxy"
	kpServiceIPs       = "service-ips"
	kpServiceNodePorts = "service-nodeports"
	// kpEndpointChain begins an endpoint chain's name; its end is "__IP/PORT".
	kpEndpointChain = "endpoint-"
)

// kubeProxyNftPath reads kube-proxy's nftables table.
type kubeProxyNftPath struct{}

func (kubeProxyNftPath) describe() string {
	return "kube-proxy's table (nft list table ip kube-proxy: the service-ips map and each Service port's chain)"
}

func (kubeProxyNftPath) counts(x execer) (portCounts, error) {
	out, code, err := x.Exec("nft list table ip " + kpTable)
	if err != nil {
		return portCounts{}, err
	}
	if code != 0 { // no table yet: kube-proxy has not written its first transaction
		return portCounts{}, nil
	}
	return parseNft(out).counts(), nil
}

// backends lists the element of vip . tcp . port in service-ips, the chain it goes to,
// and that chain's endpoint chains (session affinity), in one shell: a few small
// listings, not the whole table.
func (kubeProxyNftPath) backends(x execer, vip string, port int) (int, error) {
	out, _, err := x.Exec(nftPortCommand(vip, port))
	if err != nil {
		return 0, err
	}
	return parseNft(out).backends(vip + " . tcp . " + strconv.Itoa(port)), nil
}

// nftPortCommand prints the listings backends reads for vip:port (TCP).
func nftPortCommand(vip string, port int) string {
	return fmt.Sprintf(`el=$(nft get element ip %[1]s %[2]s '{ %[3]s . tcp . %[4]d }' 2>/dev/null) || exit 0; echo "$el"
c=$(echo "$el" | sed -n 's/.* : goto \([^ ,}]*\).*/\1/p'); [ -n "$c" ] || exit 0
nft list chain ip %[1]s "$c" | tee /tmp/nft-chain
for e in $(grep -o 'goto %[5]s[^ ,}]*' /tmp/nft-chain | sort -u | cut -d' ' -f2); do nft list chain ip %[1]s "$e"; done`,
		kpTable, kpServiceIPs, vip, port, kpEndpointChain)
}

// nftTable is what a listing of kube-proxy's table holds that the bench reads: the
// elements of its verdict maps (key → the chain they go to) and each chain's rules.
type nftTable struct {
	maps   map[string]map[string]string
	chains map[string][]string
}

// parseNft reads `nft list table` text, or several listings of parts of one table
// (`nft get element`, `nft list chain`) one after another. The maps' elements are
// "KEY : goto CHAIN" separated by commas, over as many lines as nft wraps them to.
func parseNft(out string) nftTable {
	t := nftTable{maps: map[string]map[string]string{}, chains: map[string][]string{}}
	var kind, name string
	var elements strings.Builder
	inElements := false
	for _, raw := range strings.Split(out, "\n") {
		l := strings.TrimSpace(raw)
		switch {
		case inElements:
			elements.WriteString(" " + l)
			if strings.HasSuffix(l, "}") {
				inElements = false
				t.addElements(name, elements.String())
			}
		case strings.HasPrefix(l, "map ") && strings.HasSuffix(l, "{"):
			kind, name = "map", strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "map "), "{"))
		case strings.HasPrefix(l, "chain ") && strings.HasSuffix(l, "{"):
			kind, name = "chain", strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "chain "), "{"))
			t.chains[name] = t.chains[name][:0:0]
		case strings.HasPrefix(l, "set ") && strings.HasSuffix(l, "{"):
			kind, name = "set", ""
		case l == "}":
			kind, name = "", ""
		case kind == "map" && strings.HasPrefix(l, "elements = {"):
			elements.Reset()
			elements.WriteString(strings.TrimPrefix(l, "elements = "))
			if strings.HasSuffix(l, "}") {
				t.addElements(name, elements.String())
			} else {
				inElements = true
			}
		case kind == "chain" && l != "" && !strings.HasPrefix(l, "type ") && !strings.HasPrefix(l, "comment "):
			t.chains[name] = append(t.chains[name], l)
		}
	}
	return t
}

// addElements adds the elements of "{ KEY : VERDICT, ... }" to map m, the chain of a
// "goto CHAIN" or "jump CHAIN" verdict as the value.
func (t nftTable) addElements(m, s string) {
	s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "{"), "}")
	if t.maps[m] == nil {
		t.maps[m] = map[string]string{}
	}
	for _, e := range strings.Split(s, ",") {
		key, verdict, ok := strings.Cut(e, " : ")
		if !ok {
			continue
		}
		v := strings.Fields(verdict)
		target := ""
		if len(v) == 2 && (v[0] == "goto" || v[0] == "jump") {
			target = v[1]
		}
		t.maps[m][strings.TrimSpace(key)] = target
	}
}

// backends counts the endpoints of the service-ips element key: the distinct endpoints
// its chain sends to, -1 when there is no such element.
func (t nftTable) backends(key string) int {
	chain, ok := t.maps[kpServiceIPs][key]
	if !ok {
		return -1
	}
	return len(t.endpoints(chain, 0))
}

// endpoints are the distinct "IP:PORT" that chain sends new connections to: a DNAT
// through a numgen map ("dnat ip to numgen random mod 4 map { 0 : 10.128.0.0 . 8080,
// ... }"), one endpoint's "dnat to 10.128.0.1:8080", a vmap (or an affinity rule) going
// to endpoint chains that exist and DNAT, or a goto to another Service chain (an
// external- chain to its policy chain), followed depth levels deep.
func (t nftTable) endpoints(chain string, depth int) map[string]bool {
	eps := map[string]bool{}
	rules, ok := t.chains[chain]
	if !ok || depth > 2 {
		return eps
	}
	for _, r := range rules {
		switch {
		case strings.Contains(r, "dnat") && strings.Contains(r, " map {"):
			body := r[strings.Index(r, " map {")+len(" map {"):]
			body, _, _ = strings.Cut(body, "}")
			for _, e := range strings.Split(body, ",") {
				_, target, ok := strings.Cut(e, ":")
				f := strings.Fields(strings.ReplaceAll(target, " . ", " "))
				if ok && len(f) == 2 {
					eps[f[0]+":"+f[1]] = true
				}
			}
		case strings.Contains(r, "dnat to "):
			if f := strings.Fields(r[strings.Index(r, "dnat to ")+len("dnat to "):]); len(f) > 0 {
				if _, err := netip.ParseAddrPort(f[0]); err == nil {
					eps[f[0]] = true
				}
			}
		default:
			for _, f := range gotoTargets(r) {
				// Endpoint and Service port chains have a "/" in their names, kube-proxy's
				// own chains (mark-for-masquerade) none: isServiceChainName.
				if strings.Contains(f, "/") {
					for ep := range t.endpoints(f, depth+1) {
						eps[ep] = true
					}
				}
			}
		}
	}
	return eps
}

// gotoTargets are the chains rule r goes or jumps to.
func gotoTargets(r string) []string {
	f := strings.Fields(strings.NewReplacer(",", " ", "{", " ", "}", " ").Replace(r))
	var out []string
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "goto" || f[i] == "jump" {
			out = append(out, f[i+1])
		}
	}
	return out
}

// counts counts the table's Service ports: the service-ips and service-nodeports
// elements, the ClusterIP ones (service-ips keys "IP . tcp . PORT" in the service range)
// with endpoints apart.
func (t nftTable) counts() portCounts {
	var c portCounts
	for _, m := range []string{kpServiceIPs, kpServiceNodePorts} {
		for key, chain := range t.maps[m] {
			n := len(t.endpoints(chain, 0))
			c.Ports++
			c.Backends += n
			ip, _, _ := strings.Cut(key, " ")
			if a, err := netip.ParseAddr(ip); m == kpServiceIPs && err == nil && serviceCIDR.Contains(a) && n > 0 {
				c.ClusterPorts++
				c.ClusterBackends += n
			}
		}
	}
	return c
}

package main

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// nodeStateScript prints the node's whole proxy state in the layout of `ipvs-proxier
// plan`: the IPVS table, kube-ipvs0's addresses, the sets, both families' rules, each
// section under plan's own heading, so one reader takes both.
const nodeStateScript = `ipvsadm -Ln
echo '# addresses on kube-ipvs0'; ip addr show dev kube-ipvs0
echo '# ipset save'; ipset save
echo '# IPv4 iptables-save'; iptables-save
echo '# IPv6 iptables-save'; ip6tables-save`

// stateLines reads plan's output, or nodeStateScript's, into comparable lines, sorted:
// every virtual server with its flags, every real server of weight above 0 with its
// forwarding and weight (connection counters dropped; one at weight 0 is draining, which
// plan never shows, and the drain verdict judges), every address, every KUBE-* set's
// type and members (sizes dropped: the kernel's grow with their members), every KUBE-*
// chain, and every rule with its table, chain and place in the chain.
func stateLines(text string) []string {
	var out []string
	section, table, family := "ipvs", "", ""
	vs := ""
	place := map[string]int{}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if strings.HasPrefix(l, "# ") {
			switch {
			case strings.HasPrefix(l, "# addresses"):
				section = "addr"
			case strings.HasPrefix(l, "# ipset"):
				section = "set"
			case strings.Contains(l, "iptables-save") && (strings.HasPrefix(l, "# IPv4") || strings.HasPrefix(l, "# IPv6")):
				section, family = "rules", f[1]
				place = map[string]int{}
			}
			continue
		}
		if len(f) == 0 {
			continue
		}
		switch section {
		case "ipvs":
			switch {
			case len(f) >= 3 && (f[0] == "TCP" || f[0] == "UDP" || f[0] == "SCTP"):
				vs = f[0] + " " + f[1]
				out = append(out, "vs "+strings.Join(f, " "))
			case len(f) >= 4 && f[0] == "->" && f[1] != "RemoteAddress:Port" && f[3] != "0":
				out = append(out, "rs "+vs+" -> "+strings.Join(f[1:4], " "))
			}
		case "addr":
			if (f[0] == "inet" || f[0] == "inet6") && len(f) > 1 {
				out = append(out, "addr "+f[1])
			}
		case "set":
			if len(f) >= 3 && strings.HasPrefix(f[1], "KUBE-") {
				switch f[0] {
				case "create":
					out = append(out, "set "+strings.Join(f[:3], " "))
				case "add":
					out = append(out, "set "+strings.Join(f, " "))
				}
			}
		case "rules":
			switch {
			case strings.HasPrefix(l, "*"):
				table = l[1:]
			case strings.HasPrefix(l, ":KUBE-"):
				out = append(out, fmt.Sprintf("chain %s %s %s", family, table, f[0][1:]))
			case f[0] == "-A" && len(f) > 1 && !strings.HasPrefix(f[1], "KUBE-"):
				// A jump from a built-in chain: the daemon inserts each at the chain's
				// top (iptables-restore `-I CHAIN 1`, ahead of other software's rules,
				// as kube-proxy prepends its jumps), so the node holds them in the
				// reverse of plan's order. Their order among themselves is not compared.
				out = append(out, fmt.Sprintf("rule %s %s %s jump %s", family, table, f[1], canonRule(family, f[2:])))
			case f[0] == "-A" && len(f) > 1:
				key := table + " " + f[1]
				out = append(out, fmt.Sprintf("rule %s %s %s #%d %s", family, table, f[1], place[key], canonRule(family, f[2:])))
				place[key]++
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// canonRule writes a rule's arguments as iptables-save prints them, so plan's
// iptables-restore input and the node's saved rules compare: hexadecimal without
// leading zeros, --or-mark M as --set-xmark M/M and --xor-mark M as --set-xmark M/0x0
// (libxt_MARK), REJECT with its default --reject-with, an -s or -d address with its
// full prefix length, and --vproto as a number (libxt_ipvs prints it so). --vaddr keeps
// no /32: libxtables leaves a full mask out (xtables_ipmask_to_numeric).
func canonRule(family string, args []string) string {
	full, reject := "/32", "icmp-port-unreachable"
	if family == "IPv6" {
		full, reject = "/128", "icmp6-port-unreachable"
	}
	protos := map[string]string{"tcp": "6", "udp": "17", "sctp": "132"}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "0x") {
			a = "0x" + strings.TrimLeft(a[2:], "0")
			if a == "0x" {
				a = "0x0"
			}
			if m, mask, ok := strings.Cut(a, "/"); ok && strings.HasPrefix(mask, "0x") {
				mask = "0x" + strings.TrimLeft(mask[2:], "0")
				if mask == "0x" {
					mask = "0x0"
				}
				a = m + "/" + mask
			}
		}
		next := func() string {
			if i+1 < len(args) {
				i++
				return canonRule(family, args[i:i+1])
			}
			return ""
		}
		switch a {
		case "--or-mark":
			m := next()
			out = append(out, "--set-xmark", m+"/"+m)
		case "--xor-mark":
			out = append(out, "--set-xmark", next()+"/0x0")
		case "-s", "-d":
			v := next()
			if !strings.Contains(v, "/") {
				v += full
			}
			out = append(out, a, v)
		case "--vproto":
			v := next()
			if n, ok := protos[v]; ok {
				v = n
			}
			out = append(out, a, v)
		default:
			out = append(out, a)
		}
	}
	if len(out) >= 2 && out[len(out)-2] == "-j" && out[len(out)-1] == "REJECT" {
		out = append(out, "--reject-with", reject)
	}
	return strings.Join(frontFirst(out), " ")
}

// frontOptions are the options iptables-save prints before every match, in its order.
var frontOptions = []string{"-s", "-d", "-i", "-o", "-p"}

// frontFirst moves the front options (each with its value and its "!") ahead of the
// matches, in iptables-save's order; the rest keeps its order.
func frontFirst(args []string) []string {
	front := map[string][]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		neg := args[i] == "!" && i+1 < len(args) && slices.Contains(frontOptions, args[i+1])
		at := i
		if neg {
			at = i + 1
		}
		if slices.Contains(frontOptions, args[at]) && at+1 < len(args) {
			opt := args[i : at+2]
			front[args[at]] = append(front[args[at]], opt...)
			i = at + 1
			continue
		}
		rest = append(rest, args[i])
	}
	var out []string
	for _, o := range frontOptions {
		out = append(out, front[o]...)
	}
	return append(out, rest...)
}

// diffLines is what a has that b lacks, and what b has that a lacks (both sorted).
func diffLines(a, b []string) (onlyA, onlyB []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			onlyA = append(onlyA, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			onlyB = append(onlyB, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return onlyA, onlyB
}

// nodeAddressesScript prints the node's global addresses but kube-ipvs0's, `ip -o addr`.
const nodeAddressesScript = "ip -o addr show scope global"

// nodeIPs picks from nodeAddressesScript's output the addresses the daemon opens
// NodePorts on: every global address but the Service addresses on kube-ipvs0 and
// link-local ones (the pods' veth gateway, 169.254.1.1, which kube-proxy's IPVS mode
// also skips).
func nodeIPs(out string) []string {
	var ips []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || f[1] == "kube-ipvs0" || (f[2] != "inet" && f[2] != "inet6") {
			continue
		}
		p, err := netip.ParsePrefix(f[3])
		if err != nil || p.Addr().IsLinkLocalUnicast() || p.Addr().IsLoopback() {
			continue
		}
		ips = append(ips, p.Addr().String())
	}
	slices.Sort(ips)
	return slices.Compact(ips)
}

// planArgs are `ipvs-proxier plan`'s flags as the DaemonSet's: its container command
// but the binary, $(NODE_NAME) set, --config pointing at a host copy of its
// config.conf, and the node's NodePort addresses given (plan reads them from the Node
// object, the daemon from its interfaces).
func planArgs(command []string, config string, ips []string) []string {
	var args []string
	for _, a := range command[1:] {
		a = strings.ReplaceAll(a, "$(NODE_NAME)", nodeName)
		if strings.HasPrefix(a, "--config=") {
			a = "--config=" + config
		}
		args = append(args, a)
	}
	if len(ips) > 0 {
		args = append(args, "--node-ip", strings.Join(ips, ","))
	}
	return args
}

// runPlan runs `ipvs-proxier plan` (built into dir by harness.BuildNodeBinaries) on the
// host against cp's apiserver, read once through an admin kubeconfig, with args; it
// returns what plan printed, and plan's stderr in its error.
func runPlan(cp *harness.ControlPlane, dir string, args ...string) (string, error) {
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(dir, "usr/local/bin/ipvs-proxier"), append([]string{"plan", "--kubeconfig", kubeconfig}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("plan: %w: %s", err, stderr.String())
	}
	return string(out), nil
}

// planOutput is plan's output for the node as the DaemonSet's daemon is configured.
func (s *soak) planOutput(dir string) (string, error) {
	config := filepath.Join(dir, "config.conf")
	if err := os.WriteFile(config, []byte(s.dep.Files["var/lib/kube-proxy/config.conf"]), 0o600); err != nil {
		return "", err
	}
	addrs, err := s.node.MustExec(nodeAddressesScript)
	if err != nil {
		return "", err
	}
	return runPlan(s.cp, dir, planArgs(s.dep.Command, config, nodeIPs(addrs))...)
}

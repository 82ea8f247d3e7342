package linux

import (
	"fmt"
	"os/exec"
)

// Tools are the only programs the daemon runs, each with the Debian package that ships
// it. The image's Dockerfile must install every package here; a test checks it. Every
// exec goes through command, so a program missing from this list fails at once.
var Tools = map[string]string{
	"iptables-nft": "iptables", "iptables-nft-save": "iptables", "iptables-nft-restore": "iptables",
	"iptables-legacy": "iptables", "iptables-legacy-save": "iptables", "iptables-legacy-restore": "iptables",
	"ip6tables-nft": "iptables", "ip6tables-nft-save": "iptables", "ip6tables-nft-restore": "iptables",
	"ip6tables-legacy": "iptables", "ip6tables-legacy-save": "iptables", "ip6tables-legacy-restore": "iptables",
	// preflight loads missing IPVS and ipset modules
	"modprobe": "kmod",
}

// command returns the command for a listed tool, or one that fails when run.
func command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	if _, ok := Tools[name]; !ok {
		cmd.Err = fmt.Errorf("%s is not in linux.Tools (the image would lack it)", name)
	}
	return cmd
}

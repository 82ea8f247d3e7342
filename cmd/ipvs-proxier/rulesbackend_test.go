package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestRulesBackendOption: --rules-backend and config.conf's rulesBackend choose the
// backend (the flag wins, iptables by default); another value is refused, naming where
// it came from.
func TestRulesBackendOption(t *testing.T) {
	for _, c := range []struct {
		flags []string
		conf  string
		want  *proxier.RulesBackend
	}{
		{nil, "", proxier.RulesIptables},
		{nil, "rulesBackend: nftables", proxier.RulesNftables},
		{[]string{"--rules-backend", "iptables"}, "rulesBackend: nftables", proxier.RulesIptables},
		{[]string{"--rules-backend", "nftables"}, "", proxier.RulesNftables},
	} {
		r, err := resolveNode(configured(t, c.flags, c.conf))
		if err != nil {
			t.Fatalf("%v %q: %v", c.flags, c.conf, err)
		}
		if r.cfg.RulesBackend != c.want {
			t.Errorf("%v %q: backend %q, want %q", c.flags, c.conf, r.cfg.RulesBackend, c.want)
		}
	}
	if _, err := resolveNode(configured(t, nil, "rulesBackend: ebpf")); err == nil || !strings.Contains(err.Error(), "rulesBackend") {
		t.Errorf("bad value from the file: %v", err)
	}
	if _, err := resolveNode(configured(t, []string{"--rules-backend", "ipset"}, "")); err == nil || !strings.Contains(err.Error(), "--rules-backend") {
		t.Errorf("bad value from the flag: %v", err)
	}
}

// TestPlanNftables: plan with the nftables backend prints each family's table as `nft
// list table` does, the sets with their members, and no ipset or iptables text.
func TestPlanNftables(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runPlanTo([]string{"-f", "testdata/concatenated.json", "--hostname-override", "test-node", "--rules-backend", "nftables"}, &out, &errOut); err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut.String())
	}
	got := out.String()
	for _, want := range []string{"TCP  10.96.7.2:81", "# IPv4 nft list table\ntable ip ipvs-proxier {\n\tset KUBE-LOOP-BACK {",
		"\tset KUBE-CLUSTER-IP {\n\t\ttype ipv4_addr . inet_proto . inet_service\n", "10.96.7.2 . tcp . 81",
		"\tchain KUBE-SERVICES {\n", "# IPv6 nft list table\ntable ip6 ipvs-proxier {"} {
		if !strings.Contains(got, want) {
			t.Errorf("plan lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"ipset save", "iptables-save", "-A KUBE-SERVICES"} {
		if strings.Contains(got, not) {
			t.Errorf("plan has %q", not)
		}
	}
}

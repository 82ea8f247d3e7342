package kernel

import (
	"net/netip"
	"testing"
)

// TestLoadIsDumpsInverse: a fake loaded from another's Dump dumps the same text, for
// every kind of object Dump prints (flags and persistence, connection counts, both
// families' addresses, every set type, both families' rules).
func TestLoadIsDumpsInverse(t *testing.T) {
	a, b := netip.MustParseAddr, netip.MustParseAddrPort
	f := NewFake()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	vs1 := VirtualServer{VSKey: VSKey{Protocol: TCP, Address: a("10.96.0.1"), Port: 80}, VSSettings: VSSettings{Scheduler: "sh", Flags: FlagSched1 | FlagSched2 | FlagPersistent, Timeout: 600}}
	vs2 := VirtualServer{VSKey: VSKey{Protocol: UDP, Address: a("fd00::53"), Port: 53}, VSSettings: VSSettings{Scheduler: "rr"}}
	must(f.AddVirtualServer(vs1))
	must(f.AddVirtualServer(vs2))
	for _, err := range f.WriteRealServers([]RealServerOp{
		{VS: vs1.VSKey, RS: RealServer{Address: a("10.1.0.1"), Port: 8080, Weight: 1}},
		{VS: vs1.VSKey, RS: RealServer{Address: a("10.1.0.2"), Port: 8080, Weight: 0}},
		{VS: vs2.VSKey, RS: RealServer{Address: a("fd00:1::1"), Port: 53, Weight: 1}},
	}) {
		must(err)
	}
	f.SetConnections(vs1.VSKey, b("10.1.0.2:8080"), 3, 7)
	must(f.EnsureDummy("kube-ipvs0"))
	f.WriteAddresses("kube-ipvs0", []AddressOp{{Addr: a("10.96.0.1")}, {Addr: a("fd00::53")}})
	sets := []Set{
		{Name: "S-IP", Type: HashIP, Family: IPv4, HashSize: 1024, MaxElem: 65536},
		{Name: "S-IPPORT", Type: HashIPPort, Family: IPv6, HashSize: 1024, MaxElem: 65536},
		{Name: "S-IPPORTIP", Type: HashIPPortIP, Family: IPv4, HashSize: 1024, MaxElem: 65536},
		{Name: "S-IPPORTNET", Type: HashIPPortNet, Family: IPv4, HashSize: 1024, MaxElem: 65536},
		{Name: "S-PORT", Type: BitmapPort},
	}
	for _, s := range sets {
		must(f.EnsureSet(s))
	}
	for _, err := range f.WriteEntries([]SetOp{
		{Set: "S-IP", Entry: SetEntry{IP: a("10.96.0.1")}},
		{Set: "S-IPPORT", Entry: SetEntry{IP: a("fd00::53"), Protocol: UDP, Port: 53}},
		{Set: "S-IPPORTIP", Entry: SetEntry{IP: a("10.1.0.1"), Protocol: TCP, Port: 8080, IP2: a("10.1.0.1")}},
		{Set: "S-IPPORTNET", Entry: SetEntry{IP: a("10.96.0.1"), Protocol: SCTP, Port: 80, Net: netip.MustParsePrefix("203.0.113.0/24")}},
		{Set: "S-PORT", Entry: SetEntry{Port: 30080}},
	}) {
		must(err)
	}
	f.RestoreText(IPv4, "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -j RETURN\nCOMMIT\n")
	f.RestoreText(IPv6, "*filter\n:KUBE-FIREWALL - [0:0]\nCOMMIT\n")

	want := f.Dump()
	g := NewFake()
	must(g.Load(want))
	if got := g.Dump(); got != want {
		t.Errorf("Load(Dump()) dumps\n%s\nwant\n%s", got, want)
	}
	if err := g.Load("TCP  10.96.0.1:80 rr\n  -> 10.1.0.1:80 Tunnel 1 0 0\n"); err == nil {
		t.Error("a forwarding method other than Masq loaded")
	}
}

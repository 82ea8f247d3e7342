package main

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// dataPath is where a proxy programs a Service port, read the same way for the cold
// start, the change latency and what a proxy that ran out of budget had done. A Service
// port is programmed when the data path sends its new connections to its endpoints:
//   - IPVS (ours, kube-proxy's IPVS mode, kube-router): its virtual server has its real
//     servers (weight above 0: a real server at weight 0 drains and takes no new one);
//   - kube-proxy's nftables mode: the service-ips map of table ip kube-proxy has the
//     element "ClusterIP . tcp . port" going to the Service port's chain (service-...),
//     and that chain sends to its endpoints: a DNAT through a numgen map, one endpoint's
//     DNAT, or with session affinity a vmap to its endpoint chains (endpoint-...), which
//     exist and DNAT (kubernetes pkg/proxy/nftables/proxier.go, v1.37:
//     writeServiceToEndpointDNATs, writeServiceToEndpointJumps).
type dataPath interface {
	// describe names what the bench reads, for the notes.
	describe() string
	// counts reads every Service port the data path holds and their endpoints.
	counts(x execer) (portCounts, error)
	// backends reads how many endpoints the TCP Service port vip:port sends to, -1 when
	// the data path has no entry for it.
	backends(x execer, vip string, port int) (int, error)
}

// execer runs a shell command in the node (harness.Node).
type execer interface {
	Exec(cmd string) (out string, code int, err error)
}

// portCounts is what a data path holds.
type portCounts struct {
	// Ports and Backends: every Service port (IPVS virtual servers; nftables
	// service-ips and service-nodeports elements) and the endpoints they send to.
	Ports, Backends int
	// ClusterPorts and ClusterBackends: the ClusterIP ports sending to at least one
	// endpoint, and their endpoints.
	ClusterPorts, ClusterBackends int
}

// complete says whether c has n ClusterIP ports with endpoints each, the workload of
// the step: the apiserver's own Service has no endpoints here and is not counted.
func (c portCounts) complete(n, endpoints int) bool {
	return c.ClusterPorts >= n && c.ClusterBackends >= n*endpoints
}

// programmed says whether the Service port vip:port sends to exactly endpoints
// endpoints; with endpoints -1, whether the data path holds nothing for it (deleted).
func programmed(d dataPath, x execer, vip string, port, endpoints int) (bool, error) {
	n, err := d.backends(x, vip, port)
	return err == nil && n == endpoints, err
}

// serviceCIDR is the benchmarks' service range (benchkit.StartControlPlane).
var serviceCIDR = netip.MustParsePrefix("10.96.0.0/12")

// dataPaths is each data path's reader.
var dataPaths = map[benchkit.DataPath]dataPath{
	benchkit.DataPathIPVS:              ipvsPath{},
	benchkit.DataPathKubeProxyNftables: kubeProxyNftPath{},
}

// dataPathOf is p's data path, nil for one the scale bench cannot read (kube-proxy's
// iptables mode, measured by `make bench-dataplane`).
func dataPathOf(p benchkit.Proxy) dataPath { return dataPaths[p.DataPath] }

// ipvsPath reads the IPVS table (ipvsadm -Ln).
type ipvsPath struct{}

func (ipvsPath) describe() string { return "the IPVS table (ipvsadm -Ln)" }

func (ipvsPath) counts(x execer) (portCounts, error) {
	out, code, err := x.Exec("ipvsadm -Ln")
	if err == nil && code != 0 {
		err = fmt.Errorf("ipvsadm -Ln exited %d: %s", code, out)
	}
	if err != nil {
		return portCounts{}, err
	}
	var c portCounts
	for _, vs := range parseIPVS(out) {
		c.Ports++
		c.Backends += vs.backends
		if serviceCIDR.Contains(vs.addr.Addr()) && vs.backends > 0 {
			c.ClusterPorts++
			c.ClusterBackends += vs.backends
		}
	}
	return c, nil
}

func (ipvsPath) backends(x execer, vip string, port int) (int, error) {
	out, code, err := x.Exec("ipvsadm -Ln -t " + vip + ":" + strconv.Itoa(port))
	if err != nil {
		return 0, err
	}
	vss := parseIPVS(out)
	if code != 0 || len(vss) == 0 { // "Memory allocation problem": no such service
		return -1, nil
	}
	return vss[0].backends, nil
}

// virtualServer is one virtual server of a listing: its address and its real servers of
// weight above 0.
type virtualServer struct {
	proto    string
	addr     netip.AddrPort
	backends int
}

// parseIPVS reads `ipvsadm -Ln` (ipvsadm's print_service_entry): a virtual server line
// "TCP  10.96.0.10:80 rr" (with flags after), then its real servers
// "  -> 10.128.0.10:8080   Masq    1      0          0"; the headers are skipped.
func parseIPVS(out string) []virtualServer {
	var vss []virtualServer
	cur := -1 // the virtual server the real servers below belong to, -1 for none read
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && (f[0] == "TCP" || f[0] == "UDP" || f[0] == "SCTP" || f[0] == "FWM"):
			a, err := netip.ParseAddrPort(f[1])
			if err != nil { // a firewall-mark service: no Service port of the bench
				cur = -1
				continue
			}
			vss, cur = append(vss, virtualServer{proto: f[0], addr: a}), len(vss)
		case len(f) >= 4 && f[0] == "->" && cur >= 0:
			if w, err := strconv.Atoi(f[3]); err == nil && w > 0 {
				vss[cur].backends++
			}
		}
	}
	return vss
}

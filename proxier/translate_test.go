package proxier

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

type translateCase struct {
	name    string
	cfg     []func(*Config)
	svc     *v1.Service
	slices  []*discovery.EndpointSlice
	wantVS  map[string][]string
	wantSet map[string][]string // only the sets named here are checked; nil value = empty
	bind    []string
	flags   uint32
	timeout uint32
	sched   string
	probs   []string
}

func runTranslateCases(t *testing.T, cases []translateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := translate(testConfig(tc.cfg...), tc.svc, tc.slices...)
			if tc.wantVS != nil {
				if got := vsMap(st); !reflect.DeepEqual(got, tc.wantVS) {
					t.Errorf("virtual servers:\n got %v\nwant %v\nstate:\n%s", got, tc.wantVS, st)
				}
			}
			for set, want := range tc.wantSet {
				if got := members(st, set); !slices.Equal(got, want) {
					t.Errorf("set %s: got %v, want %v", set, got, want)
				}
			}
			if tc.bind != nil {
				var got []string
				for _, a := range st.Bind {
					got = append(got, a.String())
				}
				if !slices.Equal(got, tc.bind) {
					t.Errorf("bind: got %v, want %v", got, tc.bind)
				}
			}
			for _, vs := range st.VirtualServers {
				if vs.Flags != tc.flags || vs.Timeout != tc.timeout {
					t.Errorf("%s: flags %#x timeout %d, want %#x %d", vs.VSKey, vs.Flags, vs.Timeout, tc.flags, tc.timeout)
				}
				sched := tc.sched
				if sched == "" {
					sched = "rr"
				}
				if vs.Scheduler != sched {
					t.Errorf("%s: scheduler %s, want %s", vs.VSKey, vs.Scheduler, sched)
				}
			}
			if got := reasons(st); !slices.Equal(got, tc.probs) {
				t.Errorf("problems: got %v (%v), want %v", got, st.Problems, tc.probs)
			}
		})
	}
}

// TestTranslateAddresses covers which addresses get virtual servers: ClusterIP, NodePort,
// external and load-balancer IPs, per family and traffic policy.
func TestTranslateAddresses(t *testing.T) {
	tcp := v1.ProtocolTCP
	runTranslateCases(t, []translateCase{{
		name:    "cluster IP, one endpoint",
		svc:     makeService("ns", "svc1"),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "svc1", "s1", tcp, ep{ip: "10.180.0.1"})},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}},
		wantSet: map[string][]string{"KUBE-CLUSTER-IP": {"10.20.30.41,tcp:80"}, "KUBE-IPVS-IPS": {"10.20.30.41"}, "KUBE-LOOP-BACK": nil},
		bind:    []string{"10.20.30.41"},
	}, {
		name:    "IPv6 cluster IP uses KUBE-6- sets",
		svc:     makeService("ns", "svc2", withClusterIPs("1002:ab8::2:1")),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "svc2", "s1", tcp, ep{ip: "1009:ab8::5:6"})},
		wantVS:  map[string][]string{"TCP [1002:ab8::2:1]:80": {"[1009:ab8::5:6]:80"}},
		wantSet: map[string][]string{"KUBE-6-CLUSTER-IP": {"1002:ab8::2:1,tcp:80"}, "KUBE-CLUSTER-IP": nil},
	}, {
		name:    "IPv6 family disabled on the node",
		cfg:     []func(*Config){func(c *Config) { c.Families = []kernel.Family{kernel.IPv4} }},
		svc:     makeService("ns", "svc2", withClusterIPs("1002:ab8::2:1")),
		wantVS:  map[string][]string{},
		wantSet: map[string][]string{"KUBE-6-CLUSTER-IP": nil},
	}, {
		name:    "dual-stack service gets one virtual server per family",
		svc:     makeService("ns", "ds", withClusterIPs("10.20.30.41", "fd00::41")),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "ds", "v4", tcp, ep{ip: "10.180.0.1"}), makeSlice("ns", "ds", "v6", tcp, ep{ip: "fd00:180::1"})},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}, "TCP [fd00::41]:80": {"[fd00:180::1]:80"}},
		bind:    []string{"10.20.30.41", "fd00::41"},
		wantSet: map[string][]string{"KUBE-6-IPVS-IPS": {"fd00::41"}},
	}, {
		name:    "no endpoints: virtual server kept and rejected (kubernetes#78994)",
		svc:     makeService("ns", "svc1"),
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {}},
		wantSet: map[string][]string{"KUBE-NO-ENDPOINTS": {"10.20.30.41,tcp:80"}},
	}, {
		name:    "NodePort on every node IPv4 address, never bound",
		cfg:     []func(*Config){nodeIPs("100.101.102.103", "2001:db8::1:1")},
		svc:     makeService("ns", "np", withType(v1.ServiceTypeNodePort, 3001)),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "np", "s1", tcp, ep{ip: "10.180.0.1"})},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}, "TCP 100.101.102.103:3001": {"10.180.0.1:80"}},
		wantSet: map[string][]string{"KUBE-NODE-PORT-TCP": {"3001"}, "KUBE-6-NODE-PORT-TCP": nil},
		bind:    []string{"10.20.30.41"},
	}, {
		name:    "UDP NodePort",
		cfg:     []func(*Config){nodeIPs("100.101.102.103")},
		svc:     makeService("ns", "np", withType(v1.ServiceTypeNodePort, 3001), withProto(v1.ProtocolUDP)),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "np", "s1", v1.ProtocolUDP, ep{ip: "10.180.0.1"})},
		wantVS:  map[string][]string{"UDP 10.20.30.41:80": {"10.180.0.1:80"}, "UDP 100.101.102.103:3001": {"10.180.0.1:80"}},
		wantSet: map[string][]string{"KUBE-NODE-PORT-UDP": {"3001"}, "KUBE-CLUSTER-IP": {"10.20.30.41,udp:80"}},
	}, {
		name:    "NodePort with no endpoints",
		cfg:     []func(*Config){nodeIPs("100.101.102.103")},
		svc:     makeService("ns", "np", withType(v1.ServiceTypeNodePort, 3001)),
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {}, "TCP 100.101.102.103:3001": {}},
		wantSet: map[string][]string{"KUBE-NO-ENDPOINTS": {"10.20.30.41,tcp:80", "100.101.102.103,tcp:3001"}},
	}, {
		name:   "SCTP NodePort on several node IPs uses the hash set",
		cfg:    []func(*Config){nodeIPs("100.101.102.103", "100.101.102.104", "100.101.102.105", "2001:db8::1:1")},
		svc:    makeService("ns", "np", withType(v1.ServiceTypeNodePort, 3001), withProto(v1.ProtocolSCTP)),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "np", "s1", v1.ProtocolSCTP, ep{ip: "10.180.0.1"})},
		wantVS: map[string][]string{"SCTP 10.20.30.41:80": {"10.180.0.1:80"}, "SCTP 100.101.102.103:3001": {"10.180.0.1:80"},
			"SCTP 100.101.102.104:3001": {"10.180.0.1:80"}, "SCTP 100.101.102.105:3001": {"10.180.0.1:80"}},
		wantSet: map[string][]string{"KUBE-NODE-PORT-SCTP-HASH": {"100.101.102.103,sctp:3001", "100.101.102.104,sctp:3001", "100.101.102.105,sctp:3001"}},
	}, {
		name:   "SCTP NodePort with ETP=Local",
		cfg:    []func(*Config){nodeIPs("100.101.102.103")},
		svc:    makeService("ns", "np", withType(v1.ServiceTypeNodePort, 3001), withProto(v1.ProtocolSCTP), withETPLocal),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "np", "s1", v1.ProtocolSCTP, local("10.180.0.1"), remote("10.180.1.1"))},
		wantVS: map[string][]string{"SCTP 10.20.30.41:80": {"10.180.0.1:80", "10.180.1.1:80"}, "SCTP 100.101.102.103:3001": {"10.180.0.1:80"}},
		wantSet: map[string][]string{"KUBE-NODE-PORT-SCTP-HASH": {"100.101.102.103,sctp:3001"}, "KUBE-NODE-PORT-LOCAL-SCTP-HASH": {"100.101.102.103,sctp:3001"},
			"KUBE-LOOP-BACK": {"10.180.0.1,sctp:80,10.180.0.1"}},
	}, {
		name:    "IPv6 NodePort ignores IPv4 node IPs",
		cfg:     []func(*Config){nodeIPs("100.101.102.103", "2001:db8::1:1")},
		svc:     makeService("ns", "np", withClusterIPs("2020::1"), withType(v1.ServiceTypeNodePort, 3001)),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "np", "s4", tcp, ep{ip: "10.180.0.1"}), makeSlice("ns", "np", "s6", tcp, ep{ip: "1002:ab8::2:10"})},
		wantVS:  map[string][]string{"TCP [2020::1]:80": {"[1002:ab8::2:10]:80"}, "TCP [2001:db8::1:1]:3001": {"[1002:ab8::2:10]:80"}},
		wantSet: map[string][]string{"KUBE-6-CLUSTER-IP": {"2020::1,tcp:80"}, "KUBE-6-NODE-PORT-TCP": {"3001"}, "KUBE-NODE-PORT-TCP": nil},
	}, {
		name:    "nodePortAddresses narrows NodePorts",
		cfg:     []func(*Config){nodeIPs("100.101.102.103", "192.168.0.1"), func(c *Config) { c.NodePortAddresses = mustPrefixes("100.101.102.0/24") }},
		svc:     makeService("ns", "np", withType(v1.ServiceTypeNodePort, 3001)),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "np", "s1", tcp, ep{ip: "10.180.0.1"})},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}, "TCP 100.101.102.103:3001": {"10.180.0.1:80"}},
		wantSet: map[string][]string{"KUBE-NODE-PORT-TCP": {"3001"}},
	}, {
		// kube-proxy's NewNodePortAddresses (pkg/proxy/util/nodeport_addresses.go) reads
		// the list per family: a family it names no CIDR of listens on all its addresses.
		name: "nodePortAddresses naming only IPv4 leaves IPv6 NodePorts on every IPv6 address",
		cfg: []func(*Config){nodeIPs("100.101.102.103", "192.168.0.1", "2001:db8::1:1", "fd00::7"),
			func(c *Config) { c.NodePortAddresses = mustPrefixes("100.101.102.0/24") }},
		svc: makeService("ns", "np", withClusterIPs("10.20.30.41", "2020::1"), withType(v1.ServiceTypeNodePort, 3001)),
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {}, "TCP 100.101.102.103:3001": {}, "TCP [2020::1]:80": {},
			"TCP [2001:db8::1:1]:3001": {}, "TCP [fd00::7]:3001": {}},
		wantSet: map[string][]string{"KUBE-NODE-PORT-TCP": {"3001"}, "KUBE-6-NODE-PORT-TCP": {"3001"}},
	}, {
		name: "nodePortAddresses naming both families narrows both",
		cfg: []func(*Config){nodeIPs("100.101.102.103", "192.168.0.1", "2001:db8::1:1", "fd00::7"),
			func(c *Config) { c.NodePortAddresses = mustPrefixes("100.101.102.0/24", "fd00::/64") }},
		svc:    makeService("ns", "np", withClusterIPs("10.20.30.41", "2020::1"), withType(v1.ServiceTypeNodePort, 3001)),
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {}, "TCP 100.101.102.103:3001": {}, "TCP [2020::1]:80": {}, "TCP [fd00::7]:3001": {}},
	}, {
		name:    "external IPs: no endpoints",
		svc:     makeService("ns", "ext", func(s *v1.Service) { s.Spec.ExternalIPs = []string{"50.60.70.81"} }),
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {}, "TCP 50.60.70.81:80": {}},
		wantSet: map[string][]string{"KUBE-EXTERNAL-IP": {"50.60.70.81,tcp:80"}},
		bind:    []string{"10.20.30.41", "50.60.70.81"},
	}, {
		name: "external IPs: node IP not bound, other family ignored",
		cfg:  []func(*Config){nodeIPs("100.101.102.103")},
		svc: makeService("ns", "ext", func(s *v1.Service) {
			s.Spec.ExternalIPs = []string{"50.60.70.81", "2012::51", "100.101.102.103"}
		}),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "ext", "s1", tcp, local("10.180.0.1"), remote("10.180.1.1"))},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80", "10.180.1.1:80"}, "TCP 50.60.70.81:80": {"10.180.0.1:80", "10.180.1.1:80"},
			"TCP 100.101.102.103:80": {"10.180.0.1:80", "10.180.1.1:80"}},
		wantSet: map[string][]string{"KUBE-EXTERNAL-IP": {"100.101.102.103,tcp:80", "50.60.70.81,tcp:80"}, "KUBE-LOOP-BACK": {"10.180.0.1,tcp:80,10.180.0.1"}},
		bind:    []string{"10.20.30.41", "50.60.70.81"},
	}, {
		name:    "external IPs with ETP=Local",
		svc:     makeService("ns", "ext", withType(v1.ServiceTypeNodePort, 3001), withETPLocal, func(s *v1.Service) { s.Spec.ExternalIPs = []string{"50.60.70.81"} }),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "ext", "s1", tcp, local("10.180.0.1"), remote("10.180.1.1"))},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80", "10.180.1.1:80"}, "TCP 50.60.70.81:80": {"10.180.0.1:80"}},
		wantSet: map[string][]string{"KUBE-EXTERNAL-IP-LOCAL": {"50.60.70.81,tcp:80"}, "KUBE-EXTERNAL-IP": nil, "KUBE-EXTERNAL-NO-LOCAL-EP": nil},
	}, {
		name:    "LoadBalancer",
		cfg:     []func(*Config){nodeIPs("100.101.102.103")},
		svc:     makeService("ns", "lb", withLB("1.2.3.4")),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "lb", "s1", tcp, ep{ip: "10.180.0.1"})},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}, "TCP 1.2.3.4:80": {"10.180.0.1:80"}, "TCP 100.101.102.103:3001": {"10.180.0.1:80"}},
		wantSet: map[string][]string{"KUBE-LOAD-BALANCER": {"1.2.3.4,tcp:80"}, "KUBE-NODE-PORT-TCP": {"3001"}, "KUBE-LOAD-BALANCER-FW": nil},
		bind:    []string{"1.2.3.4", "10.20.30.41"},
	}, {
		name: "LoadBalancer ipMode Proxy and hostname ingresses are skipped",
		svc: makeService("ns", "lb", withLB(), func(s *v1.Service) {
			s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{
				{IP: "1.2.3.4", IPMode: ptr.To(v1.LoadBalancerIPModeProxy)}, {Hostname: "lb.example"},
				{IP: "1.2.3.5", IPMode: ptr.To(v1.LoadBalancerIPModeVIP)}}
		}),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "lb", "s1", tcp, ep{ip: "10.180.0.1"})},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}, "TCP 1.2.3.5:80": {"10.180.0.1:80"}},
		wantSet: map[string][]string{"KUBE-LOAD-BALANCER": {"1.2.3.5,tcp:80"}},
	}, {
		name:    "multi-port service binds its cluster IP once",
		svc:     makeService("ns", "mp", withPort(v1.ServicePort{Name: "dns", Port: 1236, Protocol: v1.ProtocolUDP})),
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {}, "UDP 10.20.30.41:1236": {}},
		wantSet: map[string][]string{"KUBE-CLUSTER-IP": {"10.20.30.41,tcp:80", "10.20.30.41,udp:1236"}, "KUBE-IPVS-IPS": {"10.20.30.41"}},
		bind:    []string{"10.20.30.41"},
	}})
}

// TestTranslateEndpoints covers endpoint selection and traffic policies (ready, serving
// and terminating endpoints, ETP/ITP=Local, topology hints) with this project's semantics
// where they differ.
func TestTranslateEndpoints(t *testing.T) {
	tcp := v1.ProtocolTCP
	mixed := []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp,
		local("10.0.1.1"), local("10.0.1.2"), ep{ip: "10.0.1.3", node: testNode, terminating: true},
		ep{ip: "10.0.1.4", node: testNode, terminating: true, down: true}, remote("10.0.1.5"))}
	onlyTerminating := []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp,
		ep{ip: "10.0.1.1", node: testNode, terminating: true}, ep{ip: "10.0.1.2", node: testNode, terminating: true},
		ep{ip: "10.0.1.3", node: testNode, notReady: true, down: true}, ep{ip: "10.0.1.4", node: "other", terminating: true},
		ep{ip: "10.0.1.5", node: "other", notReady: true, down: true})}
	np := withType(v1.ServiceTypeNodePort, 3001)
	ext := func(s *v1.Service) { s.Spec.ExternalIPs = []string{"1.2.3.4"} }
	runTranslateCases(t, []translateCase{{
		name:    "not-ready endpoints are never used",
		svc:     makeService("ns", "s"),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp, local("10.0.1.1"), remote("10.0.1.2"), remote("10.0.1.3"), ep{ip: "10.0.1.4", notReady: true})},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80", "10.0.1.2:80", "10.0.1.3:80"}},
		wantSet: map[string][]string{"KUBE-LOOP-BACK": {"10.0.1.1,tcp:80,10.0.1.1"}},
	}, {
		name:    "ready endpoints win over terminating ones; LOOP-BACK has every local one",
		svc:     makeService("ns", "s", np, ext),
		slices:  mixed,
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80", "10.0.1.2:80", "10.0.1.5:80"}, "TCP 1.2.3.4:80": {"10.0.1.1:80", "10.0.1.2:80", "10.0.1.5:80"}},
		wantSet: map[string][]string{"KUBE-LOOP-BACK": {"10.0.1.1,tcp:80,10.0.1.1", "10.0.1.2,tcp:80,10.0.1.2", "10.0.1.3,tcp:80,10.0.1.3", "10.0.1.4,tcp:80,10.0.1.4"}},
	}, {
		name:   "ETP=Local: external VS gets local ready endpoints",
		svc:    makeService("ns", "s", np, ext, withETPLocal),
		slices: mixed,
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80", "10.0.1.2:80", "10.0.1.5:80"}, "TCP 1.2.3.4:80": {"10.0.1.1:80", "10.0.1.2:80"}},
	}, {
		name:   "no ready endpoint anywhere: serving+terminating ones are used (Cluster)",
		svc:    makeService("ns", "s", np, ext),
		slices: onlyTerminating,
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80", "10.0.1.2:80", "10.0.1.4:80"}, "TCP 1.2.3.4:80": {"10.0.1.1:80", "10.0.1.2:80", "10.0.1.4:80"}},
	}, {
		name:   "ETP=Local with only terminating local endpoints uses them (Local)",
		svc:    makeService("ns", "s", np, ext, withETPLocal),
		slices: onlyTerminating,
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80", "10.0.1.2:80", "10.0.1.4:80"}, "TCP 1.2.3.4:80": {"10.0.1.1:80", "10.0.1.2:80"}},
	}, {
		name:   "ETP=Local LoadBalancer",
		cfg:    []func(*Config){nodeIPs("100.101.102.103")},
		svc:    makeService("ns", "lb", withLB("1.2.3.4"), withETPLocal, func(s *v1.Service) { s.Spec.HealthCheckNodePort = 32000 }),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "lb", "s1", tcp, local("10.180.0.1"), remote("10.180.1.1"))},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80", "10.180.1.1:80"}, "TCP 1.2.3.4:80": {"10.180.0.1:80"}, "TCP 100.101.102.103:3001": {"10.180.0.1:80"}},
		wantSet: map[string][]string{"KUBE-LOAD-BALANCER": {"1.2.3.4,tcp:80"}, "KUBE-LOAD-BALANCER-LOCAL": {"1.2.3.4,tcp:80"},
			"KUBE-NODE-PORT-TCP": {"3001"}, "KUBE-NODE-PORT-LOCAL-TCP": {"3001"}, "KUBE-HEALTH-CHECK-NODE-PORT": {"32000"}},
	}, {
		name:    "ETP=Local, no local endpoint: in-cluster clients keep all endpoints, outside traffic dropped (kubernetes#93456)",
		cfg:     []func(*Config){nodeIPs("100.101.102.103")},
		svc:     makeService("ns", "lb", withLB("1.2.3.4"), withETPLocal),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "lb", "s1", tcp, remote("10.180.1.1"))},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.180.1.1:80"}, "TCP 1.2.3.4:80": {"10.180.1.1:80"}, "TCP 100.101.102.103:3001": {"10.180.1.1:80"}},
		wantSet: map[string][]string{"KUBE-EXTERNAL-NO-LOCAL-EP": {"1.2.3.4,tcp:80", "100.101.102.103,tcp:3001"}, "KUBE-NO-ENDPOINTS": nil},
	}, {
		name:   "ITP=Cluster uses every endpoint",
		svc:    makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp, local("10.0.1.1"), remote("10.0.1.2"), remote("10.0.1.3"))},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80", "10.0.1.2:80", "10.0.1.3:80"}},
	}, {
		name:   "ITP=Local uses the local endpoint",
		svc:    makeService("ns", "s", withITPLocal),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp, local("10.0.1.1"), remote("10.0.1.2"), remote("10.0.1.3"))},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80"}},
	}, {
		name:    "ITP=Local with no local endpoint is rejected, even on an external service (differs from IPVS mode's fallback)",
		svc:     makeService("ns", "s", withITPLocal, np),
		slices:  []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp, remote("10.0.1.2"), remote("10.0.1.3"))},
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {}},
		wantSet: map[string][]string{"KUBE-NO-ENDPOINTS": {"10.20.30.41,tcp:80"}},
	}, {
		name: "zone hints narrow the cluster endpoints when every endpoint has them",
		cfg:  []func(*Config){func(c *Config) { c.Zone = "zone-a" }},
		svc:  makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp,
			ep{ip: "10.0.1.1", zones: []string{"zone-a"}}, ep{ip: "10.0.1.2", zones: []string{"zone-b"}}, ep{ip: "10.0.1.3", zones: []string{"zone-a"}})},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80", "10.0.1.3:80"}},
	}, {
		name: "zone hints are ignored when one endpoint lacks them",
		cfg:  []func(*Config){func(c *Config) { c.Zone = "zone-a" }},
		svc:  makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp,
			ep{ip: "10.0.1.1", zones: []string{"zone-a"}}, ep{ip: "10.0.1.2", zones: []string{"zone-b"}}, ep{ip: "10.0.1.3"})},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80", "10.0.1.2:80", "10.0.1.3:80"}},
	}, {
		name: "zone hints for other zones only: no filtering",
		cfg:  []func(*Config){func(c *Config) { c.Zone = "zone-c" }},
		svc:  makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp,
			ep{ip: "10.0.1.1", zones: []string{"zone-a"}}, ep{ip: "10.0.1.2", zones: []string{"zone-b"}})},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80", "10.0.1.2:80"}},
	}, {
		// PreferSameNode: the EndpointSlice controller hints each endpoint for its own node
		// and its zone (kube-proxy's topologyModeFromHints, pkg/proxy/topology.go).
		name: "node hints naming this node keep its endpoint alone",
		cfg:  []func(*Config){func(c *Config) { c.Zone = "zone-a" }},
		svc:  makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp,
			ep{ip: "10.0.1.1", nodes: []string{testNode}, zones: []string{"zone-a"}},
			ep{ip: "10.0.1.2", nodes: []string{"node-b"}, zones: []string{"zone-a"}},
			ep{ip: "10.0.1.3", nodes: []string{"node-c"}, zones: []string{"zone-b"}})},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80"}},
	}, {
		name: "the node's hinted endpoint gone: the zone's",
		cfg:  []func(*Config){func(c *Config) { c.Zone = "zone-a" }},
		svc:  makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp,
			ep{ip: "10.0.1.1", nodes: []string{testNode}, zones: []string{"zone-a"}, notReady: true},
			ep{ip: "10.0.1.2", nodes: []string{"node-b"}, zones: []string{"zone-a"}},
			ep{ip: "10.0.1.3", nodes: []string{"node-c"}, zones: []string{"zone-b"}})},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.2:80"}},
	}, {
		name: "the node's and the zone's hinted endpoints gone: every ready one",
		cfg:  []func(*Config){func(c *Config) { c.Zone = "zone-a" }},
		svc:  makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp,
			ep{ip: "10.0.1.2", nodes: []string{"node-b"}, zones: []string{"zone-b"}},
			ep{ip: "10.0.1.3", nodes: []string{"node-c"}, zones: []string{"zone-b"}})},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.2:80", "10.0.1.3:80"}},
	}, {
		name: "node hints are ignored when one ready endpoint lacks them: the zone's",
		cfg:  []func(*Config){func(c *Config) { c.Zone = "zone-a" }},
		svc:  makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp,
			ep{ip: "10.0.1.1", nodes: []string{testNode}, zones: []string{"zone-a"}},
			ep{ip: "10.0.1.2", zones: []string{"zone-a"}},
			ep{ip: "10.0.1.3", nodes: []string{"node-c"}, zones: []string{"zone-b"}})},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80", "10.0.1.2:80"}},
	}, {
		name: "duplicate endpoint across slices: the non-terminating copy wins",
		svc:  makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{
			makeSlice("ns", "s", "s1", tcp, ep{ip: "10.0.1.1", terminating: true}),
			makeSlice("ns", "s", "s2", tcp, ep{ip: "10.0.1.1"})},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80"}},
	}, {
		name: "duplicate endpoint across slices: the local copy wins",
		svc:  makeService("ns", "s", withITPLocal),
		slices: []*discovery.EndpointSlice{
			makeSlice("ns", "s", "s1", tcp, remote("10.0.1.1")),
			makeSlice("ns", "s", "s2", tcp, local("10.0.1.1"))},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80"}},
	}, {
		name: "duplicate endpoint across slices: a ready remote copy beats a not-ready local one",
		svc:  makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{
			makeSlice("ns", "s", "s1", tcp, ep{ip: "10.0.1.1", node: testNode, notReady: true}),
			makeSlice("ns", "s", "s2", tcp, remote("10.0.1.1"))},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80"}},
	}, {
		name: "duplicate endpoint across slices: the ready copy wins",
		svc:  makeService("ns", "s"),
		slices: []*discovery.EndpointSlice{
			makeSlice("ns", "s", "s1", tcp, ep{ip: "10.0.1.1", notReady: true}),
			makeSlice("ns", "s", "s2", tcp, ep{ip: "10.0.1.1"})},
		wantVS: map[string][]string{"TCP 10.20.30.41:80": {"10.0.1.1:80"}},
	}})
}

// TestTranslateFirewallAndAffinity covers source ranges, session affinity
// and schedulers.
func TestTranslateFirewallAndAffinity(t *testing.T) {
	tcp := v1.ProtocolTCP
	ranges := func(r ...string) func(*v1.Service) {
		return func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = r }
	}
	affinity := func(sec int32) func(*v1.Service) {
		return func(s *v1.Service) {
			s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
			if sec > 0 {
				s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To(sec)}}
			}
		}
	}
	annotate := func(kv ...string) func(*v1.Service) {
		return func(s *v1.Service) {
			s.Annotations = map[string]string{}
			for i := 0; i < len(kv); i += 2 {
				s.Annotations[kv[i]] = kv[i+1]
			}
		}
	}
	one := []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", tcp, ep{ip: "10.180.0.1"})}
	runTranslateCases(t, []translateCase{{
		name:   "source ranges, node outside",
		cfg:    []func(*Config){nodeIPs("192.168.1.1")},
		svc:    makeService("ns", "s", withLB("1.2.3.4"), ranges("10.0.0.0/8")),
		slices: one,
		wantSet: map[string][]string{"KUBE-LOAD-BALANCER-FW": {"1.2.3.4,tcp:80"}, "KUBE-LOAD-BALANCER-SOURCE-CIDR": {"1.2.3.4,tcp:80,10.0.0.0/8"},
			"KUBE-LOAD-BALANCER-SOURCE-IP": nil},
	}, {
		name:   "source ranges, node inside",
		cfg:    []func(*Config){nodeIPs("10.1.2.3")},
		svc:    makeService("ns", "s", withLB("1.2.3.4"), ranges("10.0.0.0/8")),
		slices: one,
		wantSet: map[string][]string{"KUBE-LOAD-BALANCER-FW": {"1.2.3.4,tcp:80"}, "KUBE-LOAD-BALANCER-SOURCE-CIDR": {"1.2.3.4,tcp:80,10.0.0.0/8"},
			"KUBE-LOAD-BALANCER-SOURCE-IP": {"1.2.3.4,tcp:80,1.2.3.4"}},
	}, {
		// kube-proxy asks whether its detected node IP (the Node's InternalIP) is inside,
		// not any local address: a second interface inside the range does not count.
		name: "source ranges, only a secondary address inside",
		cfg: []func(*Config){nodeIPs("192.168.1.1", "10.1.2.3"), func(c *Config) {
			c.PrimaryIPs = []netip.Addr{netip.MustParseAddr("192.168.1.1")}
		}},
		svc:    makeService("ns", "s", withLB("1.2.3.4"), ranges("10.0.0.0/8")),
		slices: one,
		wantSet: map[string][]string{"KUBE-LOAD-BALANCER-FW": {"1.2.3.4,tcp:80"}, "KUBE-LOAD-BALANCER-SOURCE-CIDR": {"1.2.3.4,tcp:80,10.0.0.0/8"},
			"KUBE-LOAD-BALANCER-SOURCE-IP": nil},
	}, {
		name:    "a zero source range allows everyone",
		svc:     makeService("ns", "s", withLB("1.2.3.4"), ranges("10.0.0.0/8", "0.0.0.0/0")),
		slices:  one,
		wantSet: map[string][]string{"KUBE-LOAD-BALANCER-FW": nil, "KUBE-LOAD-BALANCER-SOURCE-CIDR": nil},
	}, {
		name:    "session affinity on every virtual server",
		cfg:     []func(*Config){nodeIPs("100.101.102.103")},
		svc:     makeService("ns", "s", withType(v1.ServiceTypeNodePort, 3001), affinity(600), func(s *v1.Service) { s.Spec.ExternalIPs = []string{"50.60.70.81"} }),
		slices:  one,
		wantVS:  map[string][]string{"TCP 10.20.30.41:80": {"10.180.0.1:80"}, "TCP 50.60.70.81:80": {"10.180.0.1:80"}, "TCP 100.101.102.103:3001": {"10.180.0.1:80"}},
		flags:   kernel.FlagPersistent,
		timeout: 600,
	}, {
		name:    "session affinity default timeout",
		svc:     makeService("ns", "s", affinity(0)),
		slices:  one,
		flags:   kernel.FlagPersistent,
		timeout: 10800,
	}, {
		name:   "scheduler from --scheduler",
		cfg:    []func(*Config){func(c *Config) { c.Scheduler = "lc" }},
		svc:    makeService("ns", "s"),
		slices: one, sched: "lc",
	}, {
		name:   "scheduler annotation overrides the default",
		svc:    makeService("ns", "s", annotate(AnnotationScheduler, "sed")),
		slices: one, sched: "sed",
	}, {
		name:   "sh with flags",
		svc:    makeService("ns", "s", annotate(AnnotationScheduler, "sh", AnnotationSchedulerFlags, "sh-fallback,sh-port")),
		slices: one, sched: "sh", flags: kernel.FlagSched1 | kernel.FlagSched2,
	}, {
		name:   "mh gets the port flag by default, as in kube-proxy, and its fallback (kubernetes#139497)",
		svc:    makeService("ns", "s", annotate(AnnotationScheduler, "mh"), affinity(0)),
		slices: one, sched: "mh", flags: kernel.FlagSched1 | kernel.FlagSched2 | kernel.FlagPersistent, timeout: 10800,
	}, {
		name:   "sh always gets its fallback: a draining real server must not refuse new clients",
		svc:    makeService("ns", "s", annotate(AnnotationScheduler, "sh", AnnotationSchedulerFlags, "sh-port")),
		slices: one, sched: "sh", flags: kernel.FlagSched1 | kernel.FlagSched2,
	}, {
		name:   "sh as the default scheduler gets it too",
		cfg:    []func(*Config){func(c *Config) { c.Scheduler = "sh" }},
		svc:    makeService("ns", "s"),
		slices: one, sched: "sh", flags: kernel.FlagSched1,
	}, {
		name:   "unknown scheduler annotation falls back, with a problem",
		svc:    makeService("ns", "s", annotate(AnnotationScheduler, "fastest")),
		slices: one, probs: []string{"InvalidScheduler"},
	}, {
		name:   "flags for another scheduler are refused",
		svc:    makeService("ns", "s", annotate(AnnotationScheduler, "rr", AnnotationSchedulerFlags, "sh-port")),
		slices: one, probs: []string{"InvalidSchedulerFlags"},
	}, {
		name:   "kube-router's scheduler annotation",
		svc:    makeService("ns", "s", annotate(KubeRouterAnnotationScheduler, "lc")),
		slices: one, sched: "lc",
	}, {
		name:   "kube-router's mh with flag-1,flag-2: fallback and port",
		svc:    makeService("ns", "s", annotate(KubeRouterAnnotationScheduler, "mh", KubeRouterAnnotationSchedulerFlags, "flag-1, flag-2")),
		slices: one, sched: "mh", flags: kernel.FlagSched1 | kernel.FlagSched2,
	}, {
		name:   "kube-router's sh with flag-2: the port, and the fallback sh always gets",
		svc:    makeService("ns", "s", annotate(KubeRouterAnnotationScheduler, "sh", KubeRouterAnnotationSchedulerFlags, "flag-2")),
		slices: one, sched: "sh", flags: kernel.FlagSched1 | kernel.FlagSched2,
	}, {
		name: "ours win over kube-router's",
		svc: makeService("ns", "s", annotate(AnnotationScheduler, "sh", KubeRouterAnnotationScheduler, "lc",
			AnnotationSchedulerFlags, "sh-port", KubeRouterAnnotationSchedulerFlags, "flag-3")),
		slices: one, sched: "sh", flags: kernel.FlagSched1 | kernel.FlagSched2,
	}, {
		name:   "kube-router's unknown scheduler: the default, with a Warning (kube-router says nothing)",
		svc:    makeService("ns", "s", annotate(KubeRouterAnnotationScheduler, "fastest")),
		slices: one, probs: []string{"InvalidScheduler"},
	}, {
		name:   "kube-router's flag-3 means nothing to mh: refused with a Warning",
		svc:    makeService("ns", "s", annotate(KubeRouterAnnotationScheduler, "mh", KubeRouterAnnotationSchedulerFlags, "flag-3")),
		slices: one, sched: "mh", flags: kernel.FlagSched1 | kernel.FlagSched2, probs: []string{"InvalidSchedulerFlags"},
	}, {
		name:   "kube-router's flags on rr: refused with a Warning",
		svc:    makeService("ns", "s", annotate(KubeRouterAnnotationScheduler, "rr", KubeRouterAnnotationSchedulerFlags, "flag-1")),
		slices: one, probs: []string{"InvalidSchedulerFlags"},
	}})
}

// TestTranslateSkips covers the Services that produce nothing.
func TestTranslateSkips(t *testing.T) {
	cases := []struct {
		name string
		cfg  []func(*Config)
		svc  *v1.Service
	}{
		{"headless", nil, makeService("ns", "s", withClusterIPs("None"))},
		{"ExternalName", nil, makeService("ns", "s", func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeExternalName })},
		{"nil service (deleted)", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := Translate(testConfig(tc.cfg...), ServiceKey{"ns", "s"}, NewService(tc.svc), []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", v1.ProtocolTCP, ep{ip: "10.0.0.1"})})
			if !st.Empty() {
				t.Errorf("want empty state, got\n%s", st)
			}
		})
	}
	// Another proxy serves it: nothing is programmed but its ClusterIPs count as allocated,
	// so the unallocated-ClusterIP check never rejects that proxy's traffic.
	t.Run("another proxy's service", func(t *testing.T) {
		svc := makeService("ns", "s", withClusterIPs("10.20.30.41", "fd00:20::41"), func(s *v1.Service) { s.Labels = map[string]string{LabelServiceProxyName: "other"} })
		st := Translate(testConfig(), ServiceKey{"ns", "s"}, NewService(svc), []*discovery.EndpointSlice{makeSlice("ns", "s", "s1", v1.ProtocolTCP, ep{ip: "10.0.0.1"})})
		want := []kernel.Member{{Set: "KUBE-SERVICE-IPS", Entry: kernel.SetEntry{IP: netip.MustParseAddr("10.20.30.41")}},
			{Set: "KUBE-6-SERVICE-IPS", Entry: kernel.SetEntry{IP: netip.MustParseAddr("fd00:20::41")}}}
		slices.SortFunc(want, compareMembers)
		if len(st.VirtualServers)+len(st.Bind) != 0 || !slices.Equal(st.Members.Slice(), want) {
			t.Errorf("want only the allocated ClusterIPs, got\n%s", st)
		}
	})
	t.Run("our own proxy name is served", func(t *testing.T) {
		cfg := testConfig(func(c *Config) { c.ServiceProxyName = "ipvs-proxier" })
		svc := makeService("ns", "s", func(s *v1.Service) { s.Labels = map[string]string{LabelServiceProxyName: "ipvs-proxier"} })
		if st := translate(cfg, svc); st.Empty() {
			t.Error("service labelled with our proxy name was skipped")
		}
	})
}

func mustPrefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

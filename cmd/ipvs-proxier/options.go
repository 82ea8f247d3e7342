package main

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/metrics"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// options holds every flag the daemon and `plan` share.
type options struct {
	configFile       string
	kubeconfig       string
	master           string
	hostnameOverride string
	scheduler        string
	minSyncPeriod    time.Duration
	syncPeriod       time.Duration
	// configSyncPeriod is the informers\' resync period (kube-proxy\'s configSyncPeriod).
	configSyncPeriod time.Duration
	clusterCIDR      string
	serviceCIDRs     string
	// detectLocalMode, podBridge and podIfPrefix are kube-proxy's local-traffic detector.
	detectLocalMode   string
	podBridge         string
	podIfPrefix       string
	nodePortAddresses []string
	masqueradeAll     bool
	masqueradeBit     int
	excludeCIDRs      []string
	strictARP         bool
	tcpTimeout        time.Duration
	tcpFinTimeout     time.Duration
	udpTimeout        time.Duration
	serviceProxyName  string
	metricsAddr       string
	// vsSeriesLimit caps the virtual servers with their own ipvs_* series; 0: all.
	vsSeriesLimit    int
	healthzAddr      string
	logLevel         string
	logFormat        string
	gracefulTimeout  time.Duration
	conntrackPerCore int32
	conntrackMin     int32
	// conntrack are kube-proxy's conntrack.* timeouts, applied at every start.
	conntrack   linux.ConntrackTimeouts
	dummyDevice string
	// vipLocalRoutes: the Service IPs as local routes, not addresses on the dummy.
	vipLocalRoutes bool
	nodeIPs        []string
	bindAddress    string
	apiQPS         float32
	apiBurst       int
	// apiContentType and apiAccept are clientConnection.contentType and
	// acceptContentTypes: protobuf by default, as kube-proxy's.
	apiContentType    string
	apiAccept         string
	conntrackInterval time.Duration
	conntrackPressure float64
	profiling         bool
	maxEndpoints      int
	lockFile          string
	rulesBackend      string

	// kp holds kube-proxy's own flags (kubeproxyflags.go).
	kp kubeProxyFlags
	// planFlags are kube-proxy's flags that still act beside --config in one command
	// only: `plan --kubeconfig` names the cluster to read, not the node's connection.
	planFlags []string

	// fromFile names the config field each option took from --config, by flag name,
	// so that errors name what the user wrote.
	fromFile map[string]string

	fs *pflag.FlagSet
}

func newOptions(name string) *options {
	o := &options{fs: pflag.NewFlagSet(name, pflag.ContinueOnError)}
	fs := o.fs
	fs.StringVar(&o.configFile, "config", "", "kube-proxy KubeProxyConfiguration file (mode: ipvs); it wins: kube-proxy's flags that set a field are then ignored (named in a warning), as kube-proxy ignores them; --hostname-override, --master, -v and ipvs-proxier's own flags still act")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; in-cluster config when empty")
	fs.StringVar(&o.master, "master", "", "API server address, overrides the kubeconfig's")
	fs.StringVar(&o.hostnameOverride, "hostname-override", "", "this node's name; the hostname when empty")
	fs.StringVar(&o.scheduler, "scheduler", proxier.DefaultScheduler, "default IPVS scheduler: "+strings.Join(proxier.Schedulers, ", "))
	fs.StringVar(&o.scheduler, "ipvs-scheduler", proxier.DefaultScheduler, "alias of --scheduler")
	fs.DurationVar(&o.minSyncPeriod, "min-sync-period", time.Second, "shortest time between two syncs")
	fs.DurationVar(&o.minSyncPeriod, "ipvs-min-sync-period", time.Second, "alias of --min-sync-period")
	fs.DurationVar(&o.syncPeriod, "sync-period", 30*time.Second, "longest time between two full syncs")
	fs.DurationVar(&o.syncPeriod, "ipvs-sync-period", 30*time.Second, "alias of --sync-period")
	fs.StringVar(&o.clusterCIDR, "cluster-cidr", "", "pod CIDRs: one, or one of each family, comma-separated; traffic from them is in-cluster")
	fs.StringVar(&o.serviceCIDRs, "service-cluster-ip-range", "", "Service CIDRs, comma-separated, for the unallocated-ClusterIP check when the cluster has no ServiceCIDR objects (kube-apiserver's flag)")
	fs.StringVar(&o.detectLocalMode, "detect-local-mode", "", "how pod traffic is told apart: ClusterCIDR (the default), NodeCIDR, BridgeInterface or InterfaceNamePrefix")
	fs.StringVar(&o.podBridge, "pod-bridge-interface", "", "with --detect-local-mode=BridgeInterface: traffic in from this bridge is pod traffic")
	fs.StringVar(&o.podIfPrefix, "pod-interface-name-prefix", "", "with --detect-local-mode=InterfaceNamePrefix: traffic in from interfaces named so is pod traffic")
	fs.DurationVar(&o.configSyncPeriod, "config-sync-period", 15*time.Minute, "how often the informers replay the objects they hold (kube-proxy's configSyncPeriod); > 0")
	fs.StringSliceVar(&o.nodePortAddresses, "nodeport-addresses", nil, "CIDRs and kube-proxy's keywords (primary, all, localhost) of the node IPs NodePorts listen on, per family: a family the list names no CIDR of listens on all its addresses; localhost serves none in IPVS mode")
	fs.BoolVar(&o.masqueradeAll, "masquerade-all", false, "SNAT all ClusterIP traffic")
	fs.IntVar(&o.masqueradeBit, "iptables-masquerade-bit", proxier.DefaultMasqueradeBit, "fwmark bit that requests SNAT")
	fs.StringSliceVar(&o.excludeCIDRs, "ipvs-exclude-cidrs", nil, "CIDRs whose IPVS virtual servers are never pruned")
	fs.BoolVar(&o.strictARP, "ipvs-strict-arp", false, "set arp_ignore=1 and arp_announce=2 (MetalLB L2 needs it)")
	fs.DurationVar(&o.tcpTimeout, "ipvs-tcp-timeout", 0, "IPVS TCP session timeout; 0 leaves it alone")
	fs.DurationVar(&o.tcpFinTimeout, "ipvs-tcpfin-timeout", 0, "IPVS TCP FIN_WAIT timeout; 0 leaves it alone")
	fs.DurationVar(&o.udpTimeout, "ipvs-udp-timeout", 0, "IPVS UDP timeout; 0 leaves it alone")
	fs.StringVar(&o.serviceProxyName, "service-proxy-name", "", "serve Services labelled service.kubernetes.io/service-proxy-name with this value")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "127.0.0.1:10249", "metrics server address")
	fs.IntVar(&o.vsSeriesLimit, "metrics-per-vs-limit", metrics.DefaultVSSeriesLimit,
		"most virtual servers with their own ipvs_* series (the busiest by connections); 0 exports all; the sums over all are exported always")
	fs.StringVar(&o.healthzAddr, "healthz-bind-address", "0.0.0.0:10256", "health server address")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "json", "json or console")
	fs.DurationVar(&o.gracefulTimeout, "graceful-termination-timeout", 15*time.Minute, "longest drain at weight 0 for a removed TCP/SCTP real server")
	fs.Int32Var(&o.conntrackPerCore, "conntrack-max-per-core", 32768, "nf_conntrack_max per CPU; 0 leaves it alone")
	fs.Int32Var(&o.conntrackMin, "conntrack-min", 131072, "lower bound of nf_conntrack_max")
	// kube-proxy's conntrack flags, names and defaults (pkg/proxy/apis/config/v1alpha1/defaults.go);
	// 0 leaves the kernel's value.
	fs.DurationVar(&o.conntrack.TCPEstablished, "conntrack-tcp-timeout-established", 24*time.Hour, "nf_conntrack_tcp_timeout_established; 0 leaves it alone")
	fs.DurationVar(&o.conntrack.TCPCloseWait, "conntrack-tcp-timeout-close-wait", time.Hour, "nf_conntrack_tcp_timeout_close_wait; 0 leaves it alone (kubernetes#32551)")
	fs.BoolVar(&o.conntrack.TCPBeLiberal, "conntrack-tcp-be-liberal", false, "set nf_conntrack_tcp_be_liberal to 1 (out-of-window packets are not marked INVALID)")
	fs.DurationVar(&o.conntrack.UDP, "conntrack-udp-timeout", 0, "nf_conntrack_udp_timeout; 0 leaves it alone")
	fs.DurationVar(&o.conntrack.UDPStream, "conntrack-udp-timeout-stream", 0, "nf_conntrack_udp_timeout_stream; 0 leaves it alone")
	fs.StringVar(&o.dummyDevice, "dummy-device", proxier.DefaultDummyDevice, "dummy interface that holds the VIPs")
	fs.BoolVar(&o.vipLocalRoutes, "vip-local-routes", false,
		"hold the Service IPs as local routes through lo (ip route show table local proto 210) instead of addresses on the dummy: a cold start in far less time at tens of thousands of Service IPs, but ip addr show kube-ipvs0 shows none (not kube-proxy's convention)")
	fs.StringVar(&o.bindAddress, "bind-address", "0.0.0.0", "kube-proxy's --bind-address: one IP here overrides the node's primary IP of its family (nodePortAddresses: [primary], LoadBalancer source ranges)")
	fs.StringSliceVar(&o.nodeIPs, "node-ip", nil, "node IPs for NodePorts; by default the node's interface addresses (daemon) or its Node status (plan)")
	fs.Float32Var(&o.apiQPS, "kube-api-qps", 5, "API client QPS")
	fs.IntVar(&o.apiBurst, "kube-api-burst", 10, "API client burst")
	fs.StringVar(&o.apiContentType, "kube-api-content-type", runtime.ContentTypeProtobuf, "content type of requests to the API server (kube-proxy's default: protobuf)")
	fs.DurationVar(&o.conntrackInterval, "conntrack-report-interval", 10*time.Second, "how often to read conntrack table statistics (one query, never a dump)")
	fs.Float64Var(&o.conntrackPressure, "conntrack-pressure-threshold", 0.8, "conntrack usage (entries/max) at which pressure is reported")
	fs.IntVar(&o.maxEndpoints, "max-endpoints-per-port", proxier.DefaultMaxEndpoints,
		"most real servers programmed for one Service port; more are cut, with a Warning Event (kube-proxy has no cap)")
	fs.StringVar(&o.lockFile, "lock-file", defaultLockFile, "file the daemon locks exclusively before it touches the kernel")
	fs.StringVar(&o.rulesBackend, "rules-backend", rulesBackends[0].rules.Name, rulesBackendHelp())
	fs.BoolVar(&o.profiling, "profiling", false, "serve /debug/pprof on the metrics address (kube-proxy's enableProfiling)")
	o.addKubeProxyFlags()
	return o
}

// origin names where an option's value came from: its config field (and the file) when
// --config set it, else its flag.
func (o *options) origin(flag string) string {
	if f, ok := o.fromFile[flag]; ok {
		return f + " in " + o.configFile
	}
	return "--" + flag
}

// parsePrefixes parses CIDRs, naming the flag (or the config field) in errors.
func (o *options) parsePrefixes(flag string, items []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range items {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a CIDR", o.origin(flag), s)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// dualStackPair checks a list of CIDRs as kube-proxy's validation checks clusterCIDR with
// detectLocalMode ClusterCIDR (pkg/proxy/apis/config/validation,
// validateDualStackCIDRStrings): none, one, or one of each family.
func dualStackPair(cidrs []netip.Prefix) error {
	if len(cidrs) > 2 || len(cidrs) == 2 && cidrs[0].Addr().Is4() == cidrs[1].Addr().Is4() {
		return errors.New("must be a either a single CIDR or dual-stack pair of CIDRs (e.g. [10.100.0.0/16, fde4:8dba:82e1::/48])")
	}
	return nil
}

// resolved is the validated form of the options.
type resolved struct {
	cfg  proxier.Config
	sync reconcile.Options
	// backend is the rules backend's row; cfg.RulesBackend is its rules.
	backend  rulesBackend
	nodeName string
	// primaryNodePorts: --nodeport-addresses=primary, to be expanded from the Node.
	primaryNodePorts bool
	// warnings name settings that are valid and have no effect here, to be logged once.
	warnings []string
}

// validRanges checks the scalar options kube-proxy's validation checks, and ours.
func (o *options) validRanges() error {
	if err := proxier.ValidateScheduler(o.scheduler); err != nil {
		return fmt.Errorf("%s: %w", o.origin("scheduler"), err)
	}
	if o.minSyncPeriod < 0 || o.syncPeriod <= 0 || o.minSyncPeriod > o.syncPeriod {
		return fmt.Errorf("need 0 <= --min-sync-period (%v) <= --sync-period (%v), and --sync-period > 0", o.minSyncPeriod, o.syncPeriod)
	}
	if o.conntrackPressure <= 0 || o.conntrackPressure > 1 || o.conntrackInterval <= 0 {
		return fmt.Errorf("need 0 < --conntrack-pressure-threshold (%v) <= 1 and --conntrack-report-interval (%v) > 0", o.conntrackPressure, o.conntrackInterval)
	}
	// kube-proxy's validation: configSyncPeriod must be greater than 0.
	if o.configSyncPeriod <= 0 {
		return fmt.Errorf("%s %v: must be greater than 0", o.origin("config-sync-period"), o.configSyncPeriod)
	}
	if o.maxEndpoints <= 0 {
		return fmt.Errorf("--max-endpoints-per-port %d: want > 0", o.maxEndpoints)
	}
	if o.masqueradeBit < 0 || o.masqueradeBit > 31 {
		return fmt.Errorf("%s: %d not in 0-31", o.origin("iptables-masquerade-bit"), o.masqueradeBit)
	}
	if _, err := lookupRulesBackend(o.rulesBackend); err != nil {
		return fmt.Errorf("%s: %w", o.origin("rules-backend"), err)
	}
	if err := o.validTimeouts(); err != nil {
		return err
	}
	if err := o.validDummyName(); err != nil {
		return err
	}
	return o.completeAddresses()
}

// resolve validates the options and builds the translation and sync configs.
func (o *options) resolve(hostname func() (string, error)) (*resolved, error) {
	if err := o.validRanges(); err != nil {
		return nil, err
	}
	ignoreExternalIPs, gateWarnings, err := o.featureGates()
	if err != nil {
		return nil, err
	}
	r := &resolved{nodeName: strings.ToLower(strings.TrimSpace(o.hostnameOverride)), warnings: gateWarnings}
	// kube-proxy refuses a name of only white space rather than fall back to the
	// hostname (cmd/kube-proxy/app/options.go, processHostnameOverrideFlag).
	if r.nodeName == "" && o.hostnameOverride != "" {
		return nil, fmt.Errorf("%s: empty hostname-override is invalid", o.origin("hostname-override"))
	}
	if r.nodeName == "" {
		h, err := hostname()
		if err != nil {
			return nil, fmt.Errorf("node name: %w", err)
		}
		r.nodeName = strings.ToLower(h)
	}
	clusterCIDRs, err := o.parsePrefixes("cluster-cidr", strings.Split(o.clusterCIDR, ","))
	if err != nil {
		return nil, err
	}
	serviceCIDRs, err := o.parsePrefixes("service-cluster-ip-range", strings.Split(o.serviceCIDRs, ","))
	if err != nil {
		return nil, err
	}
	localMode := proxier.LocalMode(strings.TrimSpace(o.detectLocalMode))
	if err := proxier.ValidateLocalDetect(localMode, o.podBridge, o.podIfPrefix); err != nil {
		return nil, fmt.Errorf("%s: %w", o.origin("detect-local-mode"), err)
	}
	if localMode == "" || localMode == proxier.LocalModeClusterCIDR {
		if err := dualStackPair(clusterCIDRs); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", o.origin("cluster-cidr"), o.clusterCIDR, err)
		}
	}
	nodePortCIDRs, err := o.nodePortPrefixes(r)
	if err != nil {
		return nil, err
	}
	exclude, err := o.parsePrefixes("ipvs-exclude-cidrs", o.excludeCIDRs)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	for _, s := range o.nodeIPs {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--node-ip: %q is not an IP address", s)
		}
		ips = append(ips, a.Unmap())
	}
	bind, err := netip.ParseAddr(strings.TrimSpace(o.bindAddress))
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not an IP address", o.origin("bind-address"), o.bindAddress)
	}
	if bind.IsUnspecified() {
		bind = netip.Addr{}
	}
	if r.backend, err = lookupRulesBackend(o.rulesBackend); err != nil { // checked in validRanges
		return nil, fmt.Errorf("%s: %w", o.origin("rules-backend"), err)
	}
	r.cfg = proxier.Config{
		NodeName: r.nodeName, NodeIPs: ips, NodePortAddresses: nodePortCIDRs,
		Families: []kernel.Family{kernel.IPv4, kernel.IPv6}, Scheduler: o.scheduler,
		MasqueradeAll: o.masqueradeAll, ClusterCIDRs: clusterCIDRs, ServiceProxyName: o.serviceProxyName,
		LocalMode: localMode, BridgeInterface: o.podBridge, InterfaceNamePrefix: o.podIfPrefix, ServiceCIDRs: serviceCIDRs,
		DummyDevice: o.dummyDevice, VIPLocalRoutes: o.vipLocalRoutes, MasqueradeBit: &o.masqueradeBit, MaxEndpoints: o.maxEndpoints,
		RulesBackend: r.backend.rules, IgnoreExternalIPs: ignoreExternalIPs,
	}.WithDefaults()
	// Real servers are re-read over 10 full syncs (5 min at the default syncPeriod), or
	// ~1,000 virtual servers per full sync past 10,000: at 30,000 Services reading them
	// all every syncPeriod was most of the idle CPU. The periodic full sync runs beside
	// the partial syncs, so a change never waits for its seconds of kernel dumps.
	r.sync = reconcile.Options{Config: r.cfg, SyncPeriod: o.syncPeriod, GracefulTimeout: o.gracefulTimeout, ExcludeCIDRs: exclude,
		CheckEvery: 10, BackgroundFull: true, VSSeriesLimit: o.vsSeriesLimit, NodeOptions: source.NodeOptions{NodePortPrimary: r.primaryNodePorts, BindAddress: bind.Unmap()}}
	return r, nil
}

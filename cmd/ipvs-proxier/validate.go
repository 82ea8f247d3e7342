package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	netutils "k8s.io/utils/net"
)

// Default ports of the two listeners, as kube-proxy's (k8s.io/kubernetes/pkg/cluster/ports).
const (
	defaultHealthzPort = 10256
	defaultMetricsPort = 10249
)

// completeAddresses checks the listeners' addresses as kube-proxy's validation does
// (validateHostPort: IP:port, a valid IP, a port 1-65535), naming the flag or the config
// field. As kube-proxy's Complete, a flag's address without a port gets the default port
// (kube-proxy does so when no config file is given); a config file's must have one. ""
// and "0" turn a listener off.
func (o *options) completeAddresses() error {
	for _, a := range []struct {
		flag string
		addr *string
		port int
	}{{"healthz-bind-address", &o.healthzAddr, defaultHealthzPort}, {"metrics-bind-address", &o.metricsAddr, defaultMetricsPort}} {
		v := strings.TrimSpace(*a.addr)
		if v == "" || v == "0" {
			continue
		}
		_, fromFile := o.fromFile[a.flag]
		if !fromFile && netutils.ParseIPSloppy(strings.Trim(v, "[]")) != nil {
			v = net.JoinHostPort(strings.Trim(v, "[]"), strconv.Itoa(a.port))
		}
		if err := validHostPort(v); err != nil {
			return fmt.Errorf("%s: %q %w", o.origin(a.flag), *a.addr, err)
		}
		*a.addr = v
	}
	return nil
}

// validHostPort is kube-proxy's validateHostPort.
func validHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("must be IP:port")
	}
	if netutils.ParseIPSloppy(host) == nil {
		return fmt.Errorf("must be IP:port with a valid IP (%q)", host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("must be IP:port with a valid port (%q, 1-65535)", port)
	}
	return nil
}

// validTimeouts refuses negative IPVS timeouts from flags, as the same values in the
// config file are refused (kube-proxy's validateIPVSTimeout: "must be greater than or
// equal to 0"); 0 leaves the kernel's value alone.
func (o *options) validTimeouts() error {
	for _, t := range []struct {
		flag string
		v    time.Duration
	}{{"ipvs-tcp-timeout", o.tcpTimeout}, {"ipvs-tcpfin-timeout", o.tcpFinTimeout}, {"ipvs-udp-timeout", o.udpTimeout}} {
		if t.v < 0 {
			return fmt.Errorf("%s %v: must be greater than or equal to 0", o.origin(t.flag), t.v)
		}
	}
	return nil
}

// validDummyName checks the dummy device's name as the kernel's dev_valid_name does: 1 to
// 15 bytes (IFNAMSIZ less the NUL), not "." or "..", no '/', ':' or white space.
func (o *options) validDummyName() error {
	n := o.dummyDevice
	bad := ""
	switch {
	case n == "" || len(n) > 15:
		bad = "must be 1 to 15 bytes"
	case n == "." || n == "..":
		bad = "may not be . or .."
	case strings.ContainsAny(n, "/: \t\n\r\v\f"):
		bad = "may not hold '/', ':' or white space"
	case n == "lo":
		// Every node has it, and it is no dummy: the daemon would refuse it at start
		// (kernel.ErrNotDummy), so plan refuses it too.
		bad = "it is the loopback interface, not a dummy"
	default:
		return nil
	}
	return fmt.Errorf("%s %q: not a valid interface name: %s", o.origin("dummy-device"), n, bad)
}

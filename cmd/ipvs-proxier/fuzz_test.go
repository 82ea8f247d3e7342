package main

import (
	"os"
	"testing"
)

// FuzzConfig: any bytes as --config never panic; what resolves is within the limits the
// daemon relies on.
func FuzzConfig(f *testing.F) {
	if b, err := os.ReadFile("testdata/kubeadm-kube-proxy.conf"); err == nil {
		f.Add(b)
	}
	for _, s := range []string{"", "mode: ipvs\n", "ipvs: {syncPeriod: -1s}\n", "iptables: {masqueradeBit: 0}\n",
		"nodePortAddresses: [primary, 10.0.0.0/8]\n", "clusterCIDR: 10.244.0.0/16,fd00::/48\n", "conntrack: {min: 5, maxPerCore: 0}\n",
		"kind: Pod\n", "{\"ipvs\": {\"scheduler\": \"sh\"}}", "detectLocalMode: NodeCIDR\n"} {
		f.Add([]byte(confHead + s))
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o := newOptions("fuzz")
		if err := o.fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		o.configFile = "fuzz.conf"
		if _, err := o.applyConfig(data); err != nil {
			return
		}
		r, err := o.resolve(func() (string, error) { return "node", nil })
		if err != nil {
			return
		}
		if b := *r.cfg.MasqueradeBit; b < 0 || b > 31 {
			t.Errorf("masquerade bit %d", b)
		}
		if o.minSyncPeriod < 0 || o.syncPeriod <= 0 || o.minSyncPeriod > o.syncPeriod {
			t.Errorf("periods %v %v", o.minSyncPeriod, o.syncPeriod)
		}
		if o.tcpTimeout < 0 || o.tcpFinTimeout < 0 || o.udpTimeout < 0 || o.conntrackMin < 0 || o.conntrackPerCore < 0 {
			t.Errorf("negative value resolved: %+v", o)
		}
		if r.nodeName == "" || r.cfg.MaxEndpoints <= 0 {
			t.Errorf("resolved %+v", r)
		}
	})
}

package main

import (
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestDetectLocal: kube-proxy's detectLocalMode and detectLocal (file or flags) reach the
// translation config; a mode without its interface, or an unknown mode, is fatal with the
// field named, as kube-proxy's validation makes it.
func TestDetectLocal(t *testing.T) {
	for _, tc := range []struct {
		name          string
		flags         []string
		conf          string
		mode          proxier.LocalMode
		bridge, iface string
		err           string
	}{
		{"default", nil, "", "", "", "", ""},
		{"kubeadm's empty mode", nil, "detectLocalMode: \"\"\ndetectLocal:\n  bridgeInterface: \"\"\n  interfaceNamePrefix: \"\"", "", "", "", ""},
		{"NodeCIDR from the file", nil, "detectLocalMode: NodeCIDR", proxier.LocalModeNodeCIDR, "", "", ""},
		{"BridgeInterface from the file", nil, "detectLocalMode: BridgeInterface\ndetectLocal:\n  bridgeInterface: cbr0",
			proxier.LocalModeBridgeInterface, "cbr0", "", ""},
		{"InterfaceNamePrefix from flags", []string{"--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=veth"}, "",
			proxier.LocalModeInterfaceNamePrefix, "", "veth", ""},
		{"BridgeInterface without a bridge", nil, "detectLocalMode: BridgeInterface", "", "", "", "detectLocalMode in "},
		{"InterfaceNamePrefix with a wildcard", []string{"--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=veth+"}, "",
			"", "", "", "--detect-local-mode: detectLocal.interfaceNamePrefix \"veth+\": not an interface name"},
		{"unknown mode", nil, "detectLocalMode: PodCIDR", "", "", "", `detectLocalMode "PodCIDR": want one of ClusterCIDR, NodeCIDR`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := resolveNode(configured(t, tc.flags, tc.conf))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c := r.cfg; c.LocalMode != tc.mode || c.BridgeInterface != tc.bridge || c.InterfaceNamePrefix != tc.iface {
				t.Errorf("mode %q bridge %q prefix %q, want %q %q %q", c.LocalMode, c.BridgeInterface, c.InterfaceNamePrefix, tc.mode, tc.bridge, tc.iface)
			}
			if r.sync.Config.LocalMode != tc.mode {
				t.Errorf("the syncer's config has mode %q", r.sync.Config.LocalMode)
			}
		})
	}
}

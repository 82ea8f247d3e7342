package main

import (
	"strings"
	"testing"
)

// TestHostnameOverrideOfSpacesIsRefused: a --hostname-override (or hostnameOverride) of
// only white space is refused, as kube-proxy refuses it ("empty hostname-override is
// invalid", cmd/kube-proxy/app/options.go processHostnameOverrideFlag; nodeutil.GetHostname
// for the file's field), never replaced by the machine's hostname.
func TestHostnameOverrideOfSpacesIsRefused(t *testing.T) {
	o := newOptions("t")
	if err := o.fs.Parse([]string{"--hostname-override", "   "}); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveNode(o); err == nil || !strings.Contains(err.Error(), "--hostname-override: empty hostname-override is invalid") {
		t.Errorf("flag of spaces: %v", err)
	}
	o = newOptions("t")
	if err := o.fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	o.configFile = "f.conf"
	if _, err := o.applyConfig([]byte(confHead + "hostnameOverride: \"\\t \"\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveNode(o); err == nil || !strings.Contains(err.Error(), "hostnameOverride in f.conf: empty hostname-override is invalid") {
		t.Errorf("field of spaces: %v", err)
	}
	// Spaces around a name are trimmed and the name lower-cased, as kube-proxy's.
	o = newOptions("t")
	if err := o.fs.Parse([]string{"--hostname-override", " Node-2 "}); err != nil {
		t.Fatal(err)
	}
	if r, err := resolveNode(o); err != nil || r.nodeName != "node-2" {
		t.Errorf("padded name: %v %v", r, err)
	}
}

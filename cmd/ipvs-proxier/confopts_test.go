package main

import "testing"

// confHead is the header of every config.conf the option tests write.
const confHead = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"

// configured returns options as the daemon makes them from a command line and a
// config.conf body (below confHead), named config.conf in errors; an empty body is no
// --config. A parse error, an error from the file or any warning ends the test: the
// cases check values.
func configured(t *testing.T, flags []string, conf string) *options {
	t.Helper()
	o := newOptions("t")
	if err := o.fs.Parse(flags); err != nil {
		t.Fatal(err)
	}
	if conf == "" {
		return o
	}
	o.configFile = "config.conf"
	if w, err := o.applyConfig([]byte(confHead + conf + "\n")); err != nil || len(w) > 0 {
		t.Fatalf("%v %v", w, err)
	}
	return o
}

// resolveNode resolves o for a node named "n".
func resolveNode(o *options) (*resolved, error) {
	return o.resolve(func() (string, error) { return "n", nil })
}

package main

import (
	"strings"
	"testing"
)

// TestWithProfiling: the deployment's config gains enableProfiling once, at the top
// level of the KubeProxyConfiguration, and keeps the rest.
func TestWithProfiling(t *testing.T) {
	conf := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\nipvs:\n  scheduler: rr\n"
	got := withProfiling(conf)
	if !strings.HasPrefix(got, conf) || !strings.HasSuffix(got, "\nenableProfiling: true\n") {
		t.Errorf("got %q", got)
	}
	if again := withProfiling(got); again != got {
		t.Errorf("twice: %q", again)
	}
}

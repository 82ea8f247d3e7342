package harness

import (
	"strings"
	"testing"
)

func TestKubeletConfigFor(t *testing.T) {
	if got := kubeletConfigFor(KubeletNodeOptions{}); got != kubeletConfig {
		t.Errorf("no options changed the kubelet tier's config:\n%s", got)
	}
	c := kubeletConfigFor(KubeletNodeOptions{ClusterDNS: "10.96.0.10", LocalStorageIsolation: true})
	if !strings.Contains(c, "clusterDNS: [10.96.0.10]\nclusterDomain: cluster.local\n") {
		t.Errorf("no cluster DNS:\n%s", c)
	}
	if strings.Contains(c, "localStorageCapacityIsolation") {
		t.Errorf("local storage isolation still off:\n%s", c)
	}
}

package reconcile

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// TestNodeCIDRFollowsTheNode: with detectLocalMode NodeCIDR the rules use the Node's
// spec.podCIDRs, start as the no-op detector while the Node has none, and follow a
// change (kube-proxy exits and restarts for that; the syncer re-renders the rules).
func TestNodeCIDRFollowsTheNode(t *testing.T) {
	h := newHarness(t, kernel.Kernel{}, nil, func(o *Options) { o.Config.LocalMode = proxier.LocalModeNodeCIDR })
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}
	h.src.SetNode(node)
	h.mustSync(t)
	if r := h.rules(t); !strings.Contains(r, "KUBE-CLUSTER-IP src,dst -j KUBE-MARK-MASQ") || strings.Contains(r, "-A KUBE-EXTERNAL-NO-LOCAL -s") {
		t.Errorf("no pod CIDR yet: want the no-op detector\n%s", r)
	}
	for _, cidr := range []string{"10.244.3.0/24", "10.244.7.0/24"} {
		node.Spec.PodCIDRs = []string{cidr, "fd00:10:0:3::/64"}
		h.src.SetNode(node)
		h.tracker.AllChanged()
		h.mustSync(t)
		if r := h.rules(t); !strings.Contains(r, "dst,dst ! -s "+cidr+" -j KUBE-MARK-MASQ") || !strings.Contains(r, "-A KUBE-EXTERNAL-NO-LOCAL -s "+cidr+" -j RETURN") {
			t.Errorf("pod CIDR %s: rules\n%s", cidr, r)
		}
	}
}

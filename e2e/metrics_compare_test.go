package e2e

import (
	"slices"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// notExported names the kubeproxy_* families stock kube-proxy's IPVS mode exports that
// ipvs-proxier does not, and why (the README's metrics section says the same).
var notExported = map[string]string{}

// compareMetrics checks that every kubeproxy_* family stock kube-proxy (IPVS mode)
// exported from the same node, on the same objects, exists in ours with the same type
// and the same label names; dashboards and alerts written for kube-proxy then work.
func compareMetrics(t *testing.T, ours, theirs map[string]*dto.MetricFamily) {
	t.Helper()
	labelNames := func(f *dto.MetricFamily) []string {
		var names []string
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(names, l.GetName()) {
					names = append(names, l.GetName())
				}
			}
		}
		sort.Strings(names)
		return names
	}
	var compared, missing, differ []string
	for name, tf := range theirs {
		if !strings.HasPrefix(name, "kubeproxy_") {
			continue
		}
		compared = append(compared, name)
		of, ok := ours[name]
		switch {
		case !ok && notExported[name] != "":
			t.Logf("%s: not exported: %s", name, notExported[name])
		case !ok:
			missing = append(missing, name+"{"+strings.Join(labelNames(tf), ",")+"}")
		case of.GetType() != tf.GetType() || !slices.Equal(labelNames(of), labelNames(tf)):
			differ = append(differ, name+": ours "+of.GetType().String()+"{"+strings.Join(labelNames(of), ",")+"}, kube-proxy's "+
				tf.GetType().String()+"{"+strings.Join(labelNames(tf), ",")+"}")
		}
	}
	sort.Strings(compared)
	t.Logf("compared %d kubeproxy_* families with kube-proxy's: %s", len(compared), strings.Join(compared, " "))
	if len(compared) < 10 {
		t.Errorf("kube-proxy exported only %d kubeproxy_* families: the scrape is wrong", len(compared))
	}
	if len(missing)+len(differ) > 0 {
		sort.Strings(missing)
		sort.Strings(differ)
		t.Errorf("kube-proxy's metrics missing from ours:\n%s\nwith another type or labels:\n%s", strings.Join(missing, "\n"), strings.Join(differ, "\n"))
	}
}

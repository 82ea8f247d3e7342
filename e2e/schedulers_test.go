package e2e

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSchedulersByBehaviour: rr, sh, lc and sed, each set with the per-Service
// annotation through the apiserver, observed by where connections land.
func TestSchedulersByBehaviour(t *testing.T) {
	requireEnv(t)
	mk := func(name, sched string) string {
		svc := createService(t, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"ipvs-proxier.io/scheduler": sched}}}, 80, v1.ProtocolTCP,
			podEP{"10.244.0.11", "node-1"}, podEP{"10.244.0.12", "node-1"})
		vip := svc.Spec.ClusterIP + ":80"
		waitIPVS(t, sched, func(s string) bool {
			return strings.Contains(s, vip+" "+sched) && strings.Count(vsBlock(s, vip), "Masq") == 2
		})
		return vip
	}
	t.Run("rr alternates", func(t *testing.T) {
		vip := mk("sched-rr", "rr")
		var seq []string
		for range 4 {
			a, err := node.Ask("client", "tcp", vip)
			if err != nil {
				t.Fatal(err)
			}
			seq = append(seq, strings.Fields(a)[0])
		}
		if seq[0] == seq[1] || seq[0] != seq[2] || seq[1] != seq[3] {
			t.Errorf("rr sequence %v does not alternate", seq)
		}
	})
	t.Run("sh keeps a source on one backend", func(t *testing.T) {
		vip := mk("sched-sh", "sh")
		for _, src := range []string{"192.168.50.2", "192.168.50.3"} {
			seen := map[string]bool{}
			for range 5 {
				a, err := node.AskFrom("client", "tcp", src, vip)
				if err != nil {
					t.Fatal(err)
				}
				seen[strings.Fields(a)[0]] = true
			}
			if len(seen) != 1 {
				t.Errorf("sh from %s reached %v", src, seen)
			}
		}
	})
	for _, sched := range []string{"lc", "sed"} {
		t.Run(sched+" avoids the busy backend", func(t *testing.T) {
			vip := mk("sched-"+sched, sched)
			greet, err := node.HoldGreeted("client", vip, 3) // 3 open connections
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = node.Release() }()
			busy := map[string]int{}
			for _, g := range greet {
				busy[strings.Fields(g)[0]]++
			}
			// lc/sed spread the first three 2:1; new connections go to the one with fewer.
			var idle string
			for _, p := range []string{"pod1", "pod2"} {
				if busy[p] < 2 {
					idle = p
				}
			}
			got := answers(t, "client", "tcp", vip, 1)
			if !slices.Equal(got, []string{idle}) {
				t.Errorf("%s with open connections %v: a new one went to %v, want %s", sched, busy, got, idle)
			}
		})
	}
}

package main

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// TestChurnAgainstAPIServer: on a real apiserver (no node), every change the churn
// draws for the benchmarks' workload is accepted, the churner's state is what the API
// then holds, and `ipvs-proxier plan --strict` of the result finds no problem (a valid
// change is no reason for a Warning Event).
func TestChurnAgainstAPIServer(t *testing.T) {
	harness.RequireE2E(t)
	harness.RequireAll(t, "the churn's unit tests (churn_test.go)")
	ctx := context.Background()
	cp, err := benchkit.StartControlPlane()
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	c, err := loaderClient(cp)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	w := &benchkit.Workload{Client: c, Node: nodeName, Endpoints: 4, Parallel: 4}
	if err := w.Grow(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := cp.RegisterNode(ctx, nodeName, harness.NodeIP); err != nil {
		t.Fatal(err)
	}
	models, err := loadModels(ctx, c, n)
	if err != nil {
		t.Fatal(err)
	}
	ch := newChurner(3, models)
	a := &churnApplier{c: c, ch: ch, kinds: map[string]int{}, dirty: map[int]bool{}}
	for range 200 {
		o, ok := ch.next()
		if !ok {
			t.Fatal("no change drawn")
		}
		err := a.apply(ctx, o)
		ch.written()
		if err != nil {
			t.Fatalf("%s of %d to %+v: %v", o.Kind, o.Index, o.After, err)
		}
		a.kinds[o.Kind]++
	}
	t.Logf("changes: %s", kindCounts(a.kinds))
	got, err := loadModels(ctx, c, n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		want := ch.get(i)
		for _, m := range []*svcModel{&want, &got[i]} {
			if len(m.Endpoints) == 0 {
				m.Endpoints = nil
			}
		}
		if !reflect.DeepEqual(got[i], want) && !(!want.Exists && !got[i].Exists) {
			t.Errorf("Service %d: the API holds\n%+v\nthe churner\n%+v", i, got[i], want)
		}
	}
	dir := t.TempDir()
	if err := harness.BuildNodeBinaries(dir); err != nil {
		t.Fatal(err)
	}
	out, err := runPlan(cp, dir, "--hostname-override", nodeName, "--strict")
	if err != nil || !strings.Contains(out, "-> 10.128.") {
		t.Errorf("plan --strict: %v\n%s", err, out)
	}
	if os.Getenv("SOAK_KEEP_PLAN") != "" {
		_ = os.WriteFile(os.Getenv("SOAK_KEEP_PLAN"), []byte(out), 0o644)
	}
}

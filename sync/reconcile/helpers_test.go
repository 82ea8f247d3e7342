package reconcile

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

var update = flag.Bool("update", false, "rewrite golden files")

const testNode = "test-node"

type harness struct {
	fake    *kernel.Fake
	src     *source.StaticSource
	tracker *source.Tracker
	syncer  *Syncer
}

func newHarness(t testing.TB, k kernel.Kernel, fake *kernel.Fake, mut ...func(*Options)) *harness {
	t.Helper()
	if fake == nil {
		fake = kernel.NewFake()
	}
	if k.IPVS == nil {
		k = fake.Kernel()
	}
	h := &harness{fake: fake, src: source.NewStaticSource(), tracker: source.NewTracker(nil)}
	opts := Options{Config: proxier.Config{NodeName: testNode}, GracefulTimeout: 0}
	for _, m := range mut {
		m(&opts)
	}
	h.syncer = NewSyncer(opts, k, h.src, h.tracker)
	return h
}

func (h *harness) load(t testing.TB, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := source.LoadObjects(f, h.src, testNode); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) mustSync(t testing.TB) {
	t.Helper()
	if err := h.syncer.Sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	checkRealServerCount(t, h.syncer)
}

// rules is the fake's iptables-save text of the IPv4 rules.
func (h *harness) rules(t testing.TB) string {
	t.Helper()
	r, err := h.fake.Save(kernel.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkRealServerCount fails t when the syncer's running count of real servers is not
// the number it has cached.
func checkRealServerCount(t testing.TB, s *Syncer) {
	t.Helper()
	if got, want := s.Counts().RealServers, s.ipvs.CountRealServers(); got != want {
		t.Errorf("the running real-server count is %d, the cache holds %d", got, want)
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// mutations counts the kernel operations that change state.
func mutations(ops map[string]int) map[string]int {
	out := map[string]int{}
	for op, n := range ops {
		switch op {
		case "ListVirtualServers", "LookupVirtualServers", "ListRealServers", "ListAddresses", "ListEntries", "CountEntries", "Save", "Stats", "EnsureDummy", "EnsureSet", "ReconcileUDP":
			continue
		}
		out[op] = n
	}
	return out
}

package benchkit

import (
	"os"
	"strings"
	"testing"
)

// TestGatherCSV: a newer run's rows of a group replace all the older ones of that
// group (two repeats by one) where the first stood, other groups stay in place, a new
// group comes last, a column a file lacks stays empty, and each run's rows end their
// notes with its date from the page beside it.
func TestGatherCSV(t *testing.T) {
	dir := t.TempDir()
	all := dir + "/all.csv"
	write := func(path, text string) {
		if err := os.MkdirAll(path[:strings.LastIndex(path, "/")], 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(all, "services,proxy,run,rps\n10000,a,1,5\n5000,a,1,1\n5000,a,2,2\n5000,b,1,3\n")
	write(dir+"/run/run.csv", "services,proxy,run,rps,notes\n5000,c,1,7,\n5000,a,1,9,new\n")
	write(dir+"/run/page.md", "# A benchmark\n\nRun 2026-01-02 15:04 UTC on a test machine.\n")
	g := Gather{Columns: []string{"services", "proxy", "run", "rps", "notes"}, Key: []string{"services", "proxy"}, Page: "page.md"}
	if err := GatherCSV(all, []string{dir + "/run/run.csv"}, g); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(all)
	want := "services,proxy,run,rps,notes\n10000,a,1,5,\n5000,a,1,9,new; run of 2026-01-02 15:04 UTC\n5000,b,1,3,\n5000,c,1,7,run of 2026-01-02 15:04 UTC\n"
	if string(got) != want {
		t.Errorf("gathered:\n%s\nwant:\n%s", got, want)
	}
	write(dir+"/other.csv", "services,run\n5000,1\n")
	for _, bad := range [][]string{{dir + "/missing.csv"}, {dir + "/other.csv"}, {all}} {
		if err := GatherCSV(all, bad, g); err == nil {
			t.Errorf("gathered %v", bad)
		}
	}
	if after, _ := os.ReadFile(all); string(after) != want {
		t.Errorf("a refused gather changed the file:\n%s", after)
	}
}

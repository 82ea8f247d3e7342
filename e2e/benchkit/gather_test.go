package benchkit

import (
	"os"
	"strings"
	"testing"
)

// TestGatherCSV: a newer file's rows of a group replace all the older ones of that
// group (two repeats by one), other groups stay, rows sort by the first key as a
// number, and a column a file lacks stays empty.
func TestGatherCSV(t *testing.T) {
	dir := t.TempDir()
	all, run := dir+"/all.csv", dir+"/run.csv"
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(all, "services,proxy,run,rps\n10000,a,1,5\n5000,a,1,1\n5000,a,2,2\n5000,b,1,3\n")
	write(run, "services,proxy,run,rps,notes\n5000,a,1,9,new\n")
	if err := GatherCSV(all, []string{run}, []string{"services", "proxy", "run", "rps", "notes"}, []string{"services", "proxy"}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(all)
	want := "services,proxy,run,rps,notes\n5000,b,1,3,\n5000,a,1,9,new\n10000,a,1,5,\n"
	if string(got) != want {
		t.Errorf("gathered:\n%s\nwant:\n%s", got, want)
	}
	if err := GatherCSV(dir+"/none.csv", []string{dir + "/missing.csv"}, []string{"services"}, []string{"services"}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing run: %v", err)
	}
}

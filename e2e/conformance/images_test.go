package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImageNamesFromTheModule reads the pinned module's manifest, as the harness does.
func TestImageNamesFromTheModule(t *testing.T) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "test/utils/image/manifest.go"))
	if err != nil {
		t.Fatal(err)
	}
	names, err := ImageNames(b)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"Agnhost":            "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
		"Pause":              "registry.k8s.io/pause:3.10.2",
		"BusyBox":            "registry.k8s.io/e2e-test-images/busybox:1.37.0-2",
		"DistrolessIptables": "registry.k8s.io/build-image/distroless-iptables:v0.9.9",
	} {
		if names[k] != want {
			t.Errorf("%s: %q, want %q", k, names[k], want)
		}
	}
}

func TestImageNames(t *testing.T) {
	manifest := []byte(`
	initRegistry = RegistryList{
		PromoterE2eRegistry:      "registry.k8s.io/e2e-test-images",
		GcRegistry:               "registry.k8s.io",
	}
	configs[Agnhost] = Config{list.PromoterE2eRegistry, "agnhost", "2.66.1"}
	configs[BusyBox] = Config{list.PromoterE2eRegistry, "busybox", "1.37.0-2"}
	configs[Nginx] = Config{list.PromoterE2eRegistry, "nginx", "1.27.0-2"}
	configs[DistrolessIptables] = Config{list.PromoterE2eRegistry, "distroless-iptables", "v1"}
	configs[RegressionIssue74839] = Config{list.PromoterE2eRegistry, "regression-issue-74839", "1.5"}
	configs[Pause] = Config{list.GcRegistry, "pause", "3.10.2"}
`)
	names, err := ImageNames(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if names["Pause"] != "registry.k8s.io/pause:3.10.2" || names["Nginx"] != "registry.k8s.io/e2e-test-images/nginx:1.27.0-2" {
		t.Errorf("names: %v", names)
	}
	if _, err := ImageNames(manifest[:strings.Index(string(manifest), "configs[Pause]")]); err == nil {
		t.Error("a manifest without Pause accepted")
	}
	if _, err := ImageNames([]byte(strings.Replace(string(manifest), "GcRegistry:", "OtherRegistry:", 1))); err == nil {
		t.Error("an image whose registry has no default accepted")
	}
}

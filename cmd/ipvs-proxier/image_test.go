package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ipvs-proxier/ipvs-proxier/kernel/linux"
)

// finalStage returns the Dockerfile's last stage.
func finalStage(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := regexp.MustCompile(`(?m)^FROM `).Split(string(b), -1)
	return stages[len(stages)-1]
}

// TestImageHasEveryTool: no Docker engine runs in CI, so the image is checked by reading
// its Dockerfile: every program the daemon runs must come from a package the final
// stage installs, and the binary must land where the DaemonSet runs it.
func TestImageHasEveryTool(t *testing.T) {
	final := finalStage(t)
	m := regexp.MustCompile(`apt-get install[^\n]*?--no-install-recommends ([a-z0-9 .+-]+)`).FindStringSubmatch(final)
	if m == nil {
		t.Fatalf("the final stage installs no packages:\n%s", final)
	}
	installed := strings.Fields(m[1])
	for tool, pkg := range linux.Tools {
		if !slices.Contains(installed, pkg) {
			t.Errorf("the daemon runs %s from package %s, which the image does not install (%v)", tool, pkg, installed)
		}
		// Where this machine is Debian-like and has the tool, check the package claim.
		if path, err := exec.LookPath(tool); err == nil {
			if out, err := exec.Command("dpkg", "-S", "bin/"+tool).Output(); err == nil && !strings.HasPrefix(string(out), pkg+":") {
				t.Errorf("%s (%s) is shipped by %q, not %s", tool, path, strings.TrimSpace(string(out)), pkg)
			}
		}
	}
	if !strings.Contains(final, "debian:") {
		t.Errorf("the final stage is not a Debian image, so the package names above mean nothing")
	}

	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Image           string
						ImagePullPolicy string `json:"imagePullPolicy"`
						Command         []string
					}
				}
			}
		}
	}
	b, err := os.ReadFile("../../deploy/base/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &ds); err != nil {
		t.Fatal(err)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	if !strings.Contains(final, "COPY --from=build /out/ipvs-proxier "+c.Command[0]) {
		t.Errorf("the DaemonSet runs %s, which the image does not put there", c.Command[0])
	}
	// The pinned tag is the one `make image` builds; IfNotPresent so that a restart or a
	// reboot does not need the registry (a `:latest` tag would mean Always).
	release := regexp.MustCompile(`(?m)^RELEASE := (\S+)$`).FindSubmatch(mustRead(t, "../../Makefile"))
	if release == nil || !strings.HasSuffix(c.Image, ":"+string(release[1])) || c.ImagePullPolicy != "IfNotPresent" {
		t.Errorf("DaemonSet image %s (pull policy %q), Makefile RELEASE %q: want the release tag and IfNotPresent", c.Image, c.ImagePullPolicy, release)
	}
	if !strings.Contains(string(mustRead(t, "../../Dockerfile")), "CGO_ENABLED=0") {
		t.Error("the binary is not built static")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

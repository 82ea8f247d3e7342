package conformance

import (
	"fmt"
	"regexp"
)

// The suite's images are named by test/utils/image/manifest.go in the pinned module;
// e2e.test compiles the same file in, so reading it here gives the exact names its
// pods ask for.

// SuiteImages are the manifest entries the selected tests run, by their name there.
var SuiteImages = []string{"Agnhost", "BusyBox", "Nginx", "DistrolessIptables", "RegressionIssue74839", "Pause"}

var (
	registryLine = regexp.MustCompile(`(?m)^\s*(\w+Registry):\s*"([^"]+)",`)
	configLine   = regexp.MustCompile(`(?m)^\s*configs\[(\w+)\]\s*=\s*Config\{list\.(\w+),\s*"([^"]+)",\s*"([^"]+)"\}`)
)

// ImageNames reads manifest.go and returns the full reference of each of SuiteImages
// (registry/name:version, the registries at their defaults, as no
// KUBE_TEST_REPO_LIST is set).
func ImageNames(manifest []byte) (map[string]string, error) {
	registries := map[string]string{}
	for _, m := range registryLine.FindAllSubmatch(manifest, -1) {
		if _, seen := registries[string(m[1])]; !seen {
			registries[string(m[1])] = string(m[2])
		}
	}
	all := map[string]string{}
	for _, m := range configLine.FindAllSubmatch(manifest, -1) {
		reg, ok := registries[string(m[2])]
		if !ok {
			return nil, fmt.Errorf("manifest: %s uses registry %s, which has no default", m[1], m[2])
		}
		all[string(m[1])] = fmt.Sprintf("%s/%s:%s", reg, m[3], m[4])
	}
	out := map[string]string{}
	for _, name := range SuiteImages {
		ref, ok := all[name]
		if !ok {
			return nil, fmt.Errorf("manifest: no image %s", name)
		}
		out[name] = ref
	}
	return out, nil
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// kube-router's service proxy as a DaemonSet (e2e/kubelet/testdata/kube-router.yaml), run
// with the flags the e2e tier runs it with (harness.KubeRouterCommand), on an image built
// like kube-proxy's (e2e/image -kube-router).

// kubeRouterImage is the image the manifest names: upstream's name, built here.
const kubeRouterImage = "docker.io/cloudnativelabs/kube-router:" + harness.KubeRouterVersion

// kubeRouterKubeconfig is where the manifest mounts its ConfigMap's kubeconfig, the
// path upstream's manifest gives it.
const kubeRouterKubeconfig = "/var/lib/kube-router/kubeconfig"

// kubeRouterCommand is harness.KubeRouterCommand for the DaemonSet: the node's name from
// the downward API ($(NODE_NAME), which the kubelet expands), the kubeconfig the
// manifest mounts.
func kubeRouterCommand() ([]string, error) {
	cmd := harness.KubeRouterCommand("$(NODE_NAME)")
	found := false
	for i, a := range cmd {
		if strings.HasPrefix(a, "--kubeconfig=") {
			cmd[i], found = "--kubeconfig="+kubeRouterKubeconfig, true
		}
	}
	if !found {
		return nil, fmt.Errorf("harness.KubeRouterCommand has no --kubeconfig to point at the manifest's")
	}
	return cmd, nil
}

// kubeRouterManifest is the testdata manifest with its COMMAND set.
func kubeRouterManifest() (string, error) {
	src, err := os.ReadFile(filepath.Join(harness.E2EDir(), "kubelet/testdata/kube-router.yaml"))
	if err != nil {
		return "", err
	}
	const placeholder = "        command: COMMAND\n"
	if strings.Count(string(src), placeholder) != 1 {
		return "", fmt.Errorf("kube-router.yaml has no `command: COMMAND` to set")
	}
	if !strings.Contains(string(src), "image: "+kubeRouterImage+"\n") {
		return "", fmt.Errorf("kube-router.yaml does not run %s, the image built here", kubeRouterImage)
	}
	cmd, err := kubeRouterCommand()
	if err != nil {
		return "", err
	}
	var list strings.Builder
	list.WriteString("        command:\n")
	for _, a := range cmd {
		list.WriteString("        - " + strconv.Quote(a) + "\n")
	}
	return strings.Replace(string(src), placeholder, list.String(), 1), nil
}

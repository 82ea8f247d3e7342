package main

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestDaemonSetLeastPrivilege: the long-running container keeps NET_ADMIN and NET_RAW
// and nothing else (not privileged, no escalation, read-only root, RuntimeDefault
// seccomp); the one-time setup is an --init-only init container of the same image and
// command, which alone runs privileged.
func TestDaemonSetLeastPrivilege(t *testing.T) {
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(mustRead(t, "../../deploy/base/daemonset.yaml"), &ds); err != nil {
		t.Fatal(err)
	}
	spec := ds.Spec.Template.Spec
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 1 {
		t.Fatalf("%d containers and %d init containers, want one of each", len(spec.Containers), len(spec.InitContainers))
	}
	main, init := spec.Containers[0], spec.InitContainers[0]
	sc := main.SecurityContext
	if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.SeccompProfile == nil ||
		sc.SeccompProfile.Type != v1.SeccompProfileTypeRuntimeDefault || sc.Capabilities == nil {
		t.Fatalf("main container's securityContext %+v", sc)
	}
	if !slices.Equal(sc.Capabilities.Drop, []v1.Capability{"ALL"}) || !slices.Equal(sc.Capabilities.Add, []v1.Capability{"NET_ADMIN", "NET_RAW"}) {
		t.Errorf("capabilities drop %v add %v, want drop [ALL] add [NET_ADMIN NET_RAW]", sc.Capabilities.Drop, sc.Capabilities.Add)
	}
	if init.SecurityContext == nil || init.SecurityContext.Privileged == nil || !*init.SecurityContext.Privileged {
		t.Error("the init container is not privileged: it could not load modules or write /proc/sys")
	}
	if init.Image != main.Image || !slices.Equal(init.Command, append(slices.Clone(main.Command), "--init-only")) {
		t.Errorf("init container %s %v, want %s %v --init-only", init.Image, init.Command, main.Image, main.Command)
	}
	mounts := map[string]string{}
	for _, m := range init.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	for _, m := range main.VolumeMounts {
		if mounts[m.Name] != m.MountPath {
			t.Errorf("the init container lacks %s at %s (it reads the same config, takes the same lock)", m.Name, m.MountPath)
		}
	}
}

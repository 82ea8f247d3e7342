package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// Deployment is what a node needs to run the daemon as the DaemonSet does.
type Deployment struct {
	Command []string // the container command, $(NODE_NAME) not yet expanded
	// Files are the ConfigMap's keys at the DaemonSet's mount path (no leading slash),
	// as the kubelet projects them.
	Files map[string]string
	Token string // a token of the DaemonSet's ServiceAccount
}

// ControlPlaneEndpoint is the apiserver's address as the node sees it: what an operator
// writes into deploy/base/configmap.yaml's kubeconfig.conf.
const ControlPlaneEndpoint = "https://" + APIServerGuestIP + ":6443"

// deployPlaceholderServer is the server deploy/base/configmap.yaml's kubeconfig.conf ships
// with, for the operator to replace.
const deployPlaceholderServer = "https://control-plane.invalid:6443"

// configureServer makes the operator's one edit of deploy/: the kubeconfig's server
// becomes the control-plane endpoint.
func configureServer(cm *v1.ConfigMap) error {
	kc, ok := cm.Data["kubeconfig.conf"]
	if !ok || !strings.Contains(kc, deployPlaceholderServer) {
		return fmt.Errorf("deploy/ ConfigMap %s: no kubeconfig.conf with server %s to set", cm.Name, deployPlaceholderServer)
	}
	cm.Data["kubeconfig.conf"] = strings.ReplaceAll(kc, deployPlaceholderServer, ControlPlaneEndpoint)
	if RulesBackend() == "nftables" {
		conf := cm.Data["config.conf"]
		if !strings.Contains(conf, "\nmode: ipvs\n") {
			return fmt.Errorf("deploy/ ConfigMap %s: no `mode: ipvs` line to add rulesBackend after", cm.Name)
		}
		cm.Data["config.conf"] = strings.Replace(conf, "\nmode: ipvs\n", "\nmode: ipvs\nrulesBackend: nftables\n", 1)
	}
	return nil
}

// RulesBackend is the rules backend the e2e tier's daemons run with:
// IPVS_PROXIER_E2E_RULES (`make e2e-nftables` sets nftables), else the default.
func RulesBackend() string {
	if b := os.Getenv("IPVS_PROXIER_E2E_RULES"); b != "" {
		return b
	}
	return "iptables"
}

// configMapFiles returns the files the kubelet would project from cm into the
// DaemonSet's container: each key under the mount path of the volume that names cm.
func configMapFiles(ds *appsv1.DaemonSet, cm *v1.ConfigMap) map[string]string {
	out := map[string]string{}
	for _, vol := range ds.Spec.Template.Spec.Volumes {
		if vol.ConfigMap == nil || vol.ConfigMap.Name != cm.Name {
			continue
		}
		for _, m := range ds.Spec.Template.Spec.Containers[0].VolumeMounts {
			if m.Name == vol.Name {
				for k, v := range cm.Data {
					out[strings.TrimPrefix(filepath.Join(m.MountPath, k), "/")] = v
				}
			}
		}
	}
	return out
}

// readObjects decodes every document of the YAML files in dir (kustomization excluded).
func readObjects(dir string) ([]runtime.Object, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []runtime.Object
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := decodeAll(f, data)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// decodeAll decodes a multi-document YAML file.
func decodeAll(name string, data []byte) ([]runtime.Object, error) {
	var out []runtime.Object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, obj)
	}
}

// ApplyDeploy creates deploy/'s objects, first as a server-side dry run, then for real,
// and mints a token for the DaemonSet's ServiceAccount: the daemon then runs with
// exactly the rights deploy/ grants.
func (cp *ControlPlane) ApplyDeploy(ctx context.Context) (*Deployment, error) {
	objs, err := readObjects(filepath.Join(RepoRoot(), "deploy/base"))
	if err != nil {
		return nil, err
	}
	dep := &Deployment{}
	var saName, saNS string
	var ds *appsv1.DaemonSet
	var cm *v1.ConfigMap
	for _, obj := range objs {
		switch o := obj.(type) {
		case *v1.ConfigMap:
			if err := configureServer(o); err != nil {
				return nil, err
			}
			cm = o
		case *appsv1.DaemonSet:
			ds = o
		}
	}
	if ds == nil || cm == nil {
		return nil, fmt.Errorf("deploy/ lacks the DaemonSet or the ConfigMap")
	}
	dep.Files = configMapFiles(ds, cm)
	for _, dry := range []bool{true, false} {
		opts := metav1.CreateOptions{}
		if dry {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		for _, obj := range objs {
			var err error
			switch o := obj.(type) {
			case *v1.ServiceAccount:
				_, err = cp.Admin.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, opts)
			case *v1.ConfigMap:
				_, err = cp.Admin.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, opts)
			case *rbacv1.ClusterRole:
				_, err = cp.Admin.RbacV1().ClusterRoles().Create(ctx, o, opts)
			case *rbacv1.ClusterRoleBinding:
				_, err = cp.Admin.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
			case *appsv1.DaemonSet:
				_, err = cp.Admin.AppsV1().DaemonSets(o.Namespace).Create(ctx, o, opts)
				c := o.Spec.Template.Spec.Containers[0]
				dep.Command = append(append([]string{}, c.Command...), c.Args...)
				saName, saNS = o.Spec.Template.Spec.ServiceAccountName, o.Namespace
			default:
				err = fmt.Errorf("unexpected object %T in deploy/", obj)
			}
			if err != nil {
				return nil, fmt.Errorf("apply deploy/ (dry run %v): %w", dry, err)
			}
		}
	}
	tr, err := cp.Admin.CoreV1().ServiceAccounts(saNS).CreateToken(ctx, saName,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](86400)}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s/%s: %w", saNS, saName, err)
	}
	dep.Token = tr.Status.Token
	return dep, nil
}

// expandCommand replaces $(VAR) references as the kubelet does.
func expandCommand(cmd []string, env map[string]string) []string {
	out := make([]string, len(cmd))
	for i, a := range cmd {
		for k, v := range env {
			a = strings.ReplaceAll(a, "$("+k+")", v)
		}
		out[i] = a
	}
	return out
}

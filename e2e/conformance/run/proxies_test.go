package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/conformance"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// objects decodes every document of a rendered manifest into its typed object.
func objects(t *testing.T, path string) []runtime.Object {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []runtime.Object
	r := utilyaml.NewYAMLReader(bufioReader(b))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v\n%s", path, err, doc)
		}
		out = append(out, obj)
	}
}

// TestPrepareKubeProxy: kubeadm's manifest with config.conf's mode set, ipvs or nftables.
func TestPrepareKubeProxy(t *testing.T) {
	for _, mode := range []string{"ipvs", "nftables"} {
		d, err := prepare("kube-proxy-"+mode, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if d.daemonSet != "kube-proxy" {
			t.Errorf("%s: DaemonSet %q", mode, d.daemonSet)
		}
		var conf map[string]any
		for _, o := range objects(t, d.manifestAt) {
			if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == "kube-proxy" {
				if err := yaml.Unmarshal([]byte(cm.Data["config.conf"]), &conf); err != nil {
					t.Fatal(err)
				}
			}
		}
		if conf["mode"] != mode || conf["kind"] != "KubeProxyConfiguration" {
			t.Errorf("kube-proxy-%s: config.conf mode %v (kind %v)", mode, conf["mode"], conf["kind"])
		}
	}
	if _, err := prepare("kube-proxy-userspace", t.TempDir()); err == nil {
		t.Error("an unknown proxy prepared")
	}
}

// TestPrepareKubeRouter: kube-router's DaemonSet runs harness.KubeRouterCommand's flags
// (the node's name from the downward API, the kubeconfig it mounts), privileged on the
// host's network and PIDs, with the modules and the xtables lock, as a ServiceAccount
// that may list and watch what its informers do, on the image built here.
func TestPrepareKubeRouter(t *testing.T) {
	d, err := prepare("kube-router", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var ds *appsv1.DaemonSet
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	var sa *corev1.ServiceAccount
	var kubeconfig *corev1.ConfigMap
	for _, o := range objects(t, d.manifestAt) {
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			ds = o
		case *rbacv1.ClusterRole:
			role = o
		case *rbacv1.ClusterRoleBinding:
			binding = o
		case *corev1.ServiceAccount:
			sa = o
		case *corev1.ConfigMap:
			kubeconfig = o
		}
	}
	if ds == nil || role == nil || binding == nil || sa == nil || kubeconfig == nil {
		t.Fatalf("manifest lacks an object: %v %v %v %v %v", ds, role, binding, sa, kubeconfig)
	}
	if ds.Name != d.daemonSet || ds.Namespace != "kube-system" {
		t.Errorf("DaemonSet %s/%s, deploy waits for %s", ds.Namespace, ds.Name, d.daemonSet)
	}
	spec := ds.Spec.Template.Spec
	c := spec.Containers[0]
	want := harness.KubeRouterCommand("$(NODE_NAME)")
	for i, a := range want {
		if strings.HasPrefix(a, "--kubeconfig=") {
			want[i] = "--kubeconfig=/var/lib/kube-router/kubeconfig"
		}
	}
	if !slices.Equal(c.Command, want) {
		t.Errorf("command %q\nwant    %q", c.Command, want)
	}
	for _, f := range []string{"--run-router=false", "--run-firewall=false", "--run-service-proxy=true", "--masquerade-all", "--nodeport-bindon-all-ip"} {
		if !slices.Contains(c.Command, f) {
			t.Errorf("command lacks %s", f)
		}
	}
	if c.Image != "docker.io/cloudnativelabs/kube-router:"+harness.KubeRouterVersion || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %s (%s): the one built here, never pulled", c.Image, c.ImagePullPolicy)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "NODE_NAME" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef == nil ||
		c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("env %+v, want NODE_NAME from spec.nodeName", c.Env)
	}
	if !spec.HostNetwork || !spec.HostPID || c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Errorf("hostNetwork %v, hostPID %v, securityContext %+v", spec.HostNetwork, spec.HostPID, c.SecurityContext)
	}
	hostPaths := map[string]string{}
	for _, v := range spec.Volumes {
		switch {
		case v.HostPath != nil:
			hostPaths[v.Name] = v.HostPath.Path
		case v.ConfigMap != nil && v.ConfigMap.Name == kubeconfig.Name:
			hostPaths[v.Name] = "configmap"
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = hostPaths[m.Name]
	}
	for at, from := range map[string]string{"/lib/modules": "/lib/modules", "/run/xtables.lock": "/run/xtables.lock", "/var/lib/kube-router": "configmap"} {
		if mounts[at] != from {
			t.Errorf("%s mounted from %q, want %s", at, mounts[at], from)
		}
	}
	if !strings.Contains(kubeconfig.Data["kubeconfig"], "server: "+harness.ControlPlaneEndpoint) ||
		!strings.Contains(kubeconfig.Data["kubeconfig"], "tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token") {
		t.Errorf("kubeconfig:\n%s", kubeconfig.Data["kubeconfig"])
	}
	if spec.ServiceAccountName != sa.Name || binding.RoleRef.Name != role.Name || binding.Subjects[0].Name != sa.Name ||
		binding.Subjects[0].Namespace != sa.Namespace {
		t.Errorf("ServiceAccount %s, binding %+v", spec.ServiceAccountName, binding)
	}
	// Its informers (pkg/cmd/kube-router.go) and its Node's Get (pkg/utils/node.go).
	for _, need := range []struct{ group, resource, verb string }{
		{"", "namespaces", "list"}, {"", "namespaces", "watch"}, {"", "pods", "list"}, {"", "pods", "watch"},
		{"", "services", "list"}, {"", "services", "watch"}, {"", "nodes", "list"}, {"", "nodes", "watch"}, {"", "nodes", "get"},
		{"", "endpoints", "list"}, {"", "endpoints", "watch"}, {"discovery.k8s.io", "endpointslices", "list"},
		{"discovery.k8s.io", "endpointslices", "watch"}, {"networking.k8s.io", "networkpolicies", "list"}, {"networking.k8s.io", "networkpolicies", "watch"},
	} {
		if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, need.group) && slices.Contains(r.Resources, need.resource) && slices.Contains(r.Verbs, need.verb)
		}) {
			t.Errorf("ClusterRole lacks %s on %s (%q)", need.verb, need.resource, need.group)
		}
	}
}

// TestKubeRouterVersion: the report's title and the image name are the version built.
func TestKubeRouterVersion(t *testing.T) {
	if conformance.KubeRouterTitle != "kube-router "+harness.KubeRouterVersion {
		t.Errorf("report title %q, harness builds %s", conformance.KubeRouterTitle, harness.KubeRouterVersion)
	}
	if p, ok := conformance.Lookup("kube-router"); !ok || p.Title != conformance.KubeRouterTitle {
		t.Errorf("kube-router's column titled %q", p.Title)
	}
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

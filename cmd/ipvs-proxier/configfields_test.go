package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kpv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// TestEveryConfigFieldIsHonouredOrNamed walks kube-proxy v1.37's KubeProxyConfiguration
// type (k8s.io/kube-proxy/config/v1alpha1) field by field: each one, set alone to a valid
// non-zero value, is accepted (never fatal) and is either one ipvs-proxier honours or
// accepts (configFields) or named in the warning. A field kube-proxy adds in a later
// version fails here until it is sorted into one or the other.
func TestEveryConfigFieldIsHonouredOrNamed(t *testing.T) {
	// Values a field must have to be valid; every other field gets one for its kind.
	valid := map[string]any{
		"mode": "ipvs", "clusterCIDR": "10.244.0.0/16", "bindAddress": "0.0.0.0",
		"healthzBindAddress": "0.0.0.0:10256", "metricsBindAddress": "127.0.0.1:10249",
		"nodePortAddresses": []string{"primary"}, "detectLocalMode": "ClusterCIDR",
		"ipvs.scheduler": "rr", "ipvs.excludeCIDRs": []string{"10.0.0.0/8"},
		"clientConnection.contentType": "application/json", "clientConnection.acceptContentTypes": "application/json",
		"clientConnection.kubeconfig": "/var/lib/kube-proxy/kubeconfig.conf",
		"logging":                     map[string]any{"format": "text"}, "featureGates": map[string]bool{"ContextualLogging": true},
		"iptables.masqueradeBit": 14, "conntrack.maxPerCore": 32768, "conntrack.min": 131072,
		"oomScoreAdj": -999, "kind": "KubeProxyConfiguration", "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
	}
	paths := configPaths(reflect.TypeOf(kpv1alpha1.KubeProxyConfiguration{}), "")
	if len(paths) < 40 {
		t.Fatalf("only %d fields found: %v", len(paths), paths)
	}
	for _, p := range paths {
		v, ok := valid[p]
		if !ok {
			v = sampleValue(t, p, fieldType(reflect.TypeOf(kpv1alpha1.KubeProxyConfiguration{}), p))
		}
		doc := map[string]any{"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration"}
		nest(doc, strings.Split(p, "."), v)
		data, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		o := newOptions("t")
		_ = o.fs.Parse(nil)
		warnings, err := o.applyConfig(data)
		if err != nil {
			t.Errorf("%s: fatal: %v\n%s", p, err, data)
			continue
		}
		honoured := slices.ContainsFunc(configFields, func(f string) bool { return p == f || strings.HasPrefix(p, f+".") })
		named := len(warnings) > 0 && strings.Contains(warnings[0], p)
		if honoured == named {
			t.Errorf("%s: honoured %v, named in the warning %v (%v)", p, honoured, named, warnings)
		}
	}
}

// configPaths lists the JSON paths of a config type's fields; structs are walked into,
// except the ones ipvs-proxier takes whole (logging).
func configPaths(t reflect.Type, prefix string) []string {
	var out []string
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous || name == "" || name == "-" {
			continue
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeOf(metav1.Duration{}) && p != "logging" {
			out = append(out, configPaths(ft, p)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// fieldType is the type of the field at path p.
func fieldType(t reflect.Type, p string) reflect.Type {
	for _, name := range strings.Split(p, ".") {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for _, f := range reflect.VisibleFields(t) {
			if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n == name {
				t = f.Type
				break
			}
		}
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// sampleValue is a valid non-zero value of type ft for the field at p.
func sampleValue(t *testing.T, p string, ft reflect.Type) any {
	switch {
	case ft == reflect.TypeOf(metav1.Duration{}):
		return (3 * time.Second).String()
	case ft.Kind() == reflect.Bool:
		return true
	case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Float64:
		return 3
	case ft.Kind() == reflect.String:
		return "x"
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
		return []string{"x"}
	}
	t.Fatalf("%s: no sample value for %v", p, ft)
	return nil
}

// nest sets doc[path...] = v, making the maps on the way.
func nest(doc map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		m, ok := doc[k].(map[string]any)
		if !ok {
			m = map[string]any{}
			doc[k] = m
		}
		doc = m
	}
	doc[path[len(path)-1]] = v
}

package main

import (
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// gateSources are the packages whose feature gates kube-proxy v1.37 registers in its
// one gate set: k8s.io/kubernetes/pkg/features (its own, and the apiserver's,
// apiextensions' and controller-manager's it lists), the apiserver's and apiextensions'
// own lists (their init), client-go's (AddVersionedFeaturesToExistingFeatureGates), and
// component-base's zpages, metrics and logs gates with AllAlpha and AllBeta
// (cmd/kube-proxy/app/server.go init).
var gateSources = []struct{ module, dir string }{
	{"k8s.io/kubernetes", "pkg/features"},
	{"k8s.io/apiserver", "pkg/features"},
	{"k8s.io/apiextensions-apiserver", "pkg/features"},
	{"k8s.io/client-go", "features"},
	{"k8s.io/component-base", "zpages/features"},
	{"k8s.io/component-base", "metrics/features"},
	{"k8s.io/component-base", "logs/api/v1"},
	{"k8s.io/component-base", "featuregate"},
}

// TestKnownFeatureGates: knownFeatureGates is what kube-proxy v1.37's modules register,
// read from their source in the Go module cache (skipped when it is not there);
// -update rewrites featuregates_known.go.
func TestKnownFeatureGates(t *testing.T) {
	mod, err := os.ReadFile("../../e2e/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`k8s\.io/kubernetes v1\.(\d+)\.(\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("e2e/go.mod requires no k8s.io/kubernetes")
	}
	minor, _ := strconv.Atoi(string(m[1]))
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skip("no go env:", err)
	}
	cache := strings.TrimSpace(string(out))
	got := map[string]gateSpec{}
	for _, src := range gateSources {
		v := fmt.Sprintf("v0.%s.%s", m[1], m[2])
		if src.module == "k8s.io/kubernetes" {
			v = fmt.Sprintf("v1.%s.%s", m[1], m[2])
		}
		dir := filepath.Join(cache, src.module+"@"+v, src.dir)
		if _, err := os.Stat(dir); err != nil {
			t.Skipf("%s not in the module cache", dir)
		}
		if err := readGates(dir, minor, got); err != nil {
			t.Fatal(err)
		}
	}
	text := renderKnownGates(got, "1."+string(m[1]))
	const file = "featuregates_known.go"
	if *update {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(file); err != nil || string(want) != text {
		t.Errorf("%s differs from the modules' gates (%v): go test ./cmd/ipvs-proxier -run TestKnownFeatureGates -update", file, err)
	}
	for _, g := range []string{"AllowServiceExternalIPs", "KubeProxyIPVS", "PreferSameTrafficDistribution", "AllAlpha", "WatchListClient", "ContextualLogging"} {
		if _, ok := got[g]; !ok {
			t.Errorf("%s not found in the modules", g)
		}
	}
}

// readGates adds to gates every map literal of Feature to VersionedSpecs in the package
// at dir: each key's name (its constant's value) and its spec at Kubernetes 1.minor, the
// last one listed at or below it.
func readGates(dir string, minor int, gates map[string]gateSpec) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	consts := map[string]string{}
	var lits []*ast.CompositeLit
	{
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.ValueSpec:
					for i, name := range x.Names {
						if i < len(x.Values) {
							if b, ok := x.Values[i].(*ast.BasicLit); ok && b.Kind == token.STRING {
								consts[name.Name], _ = strconv.Unquote(b.Value)
							}
						}
					}
				case *ast.CompositeLit:
					if mt, ok := x.Type.(*ast.MapType); ok && strings.HasSuffix(exprText(mt.Key), "Feature") && strings.HasSuffix(exprText(mt.Value), "VersionedSpecs") {
						lits = append(lits, x)
					}
				}
				return true
			})
		}
	}
	for _, lit := range lits {
		for _, e := range lit.Elts {
			kv := e.(*ast.KeyValueExpr)
			key := exprText(kv.Key)
			name := key[strings.LastIndex(key, ".")+1:]
			if v, ok := consts[name]; ok && !strings.Contains(key, ".") {
				name = v
			}
			spec := gateSpec{PreAlpha: true}
			for _, s := range kv.Value.(*ast.CompositeLit).Elts {
				fields := map[string]string{}
				for _, f := range s.(*ast.CompositeLit).Elts {
					fkv := f.(*ast.KeyValueExpr)
					fields[exprText(fkv.Key)] = exprText(fkv.Value)
				}
				if specMinor(fields["Version"]) > minor {
					continue
				}
				spec = gateSpec{Default: fields["Default"] == "true", Locked: fields["LockToDefault"] == "true"}
			}
			gates[name] = spec
		}
	}
	return nil
}

// specMinor is the minor version of version.MustParse("1.N") or version.MajorMinor(0, 0).
func specMinor(expr string) int {
	m := regexp.MustCompile(`"1\.(\d+)"`).FindStringSubmatch(expr)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func exprText(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprText(x.X) + "." + x.Sel.Name
	case *ast.BasicLit:
		return x.Value
	case *ast.CallExpr:
		args := make([]string, len(x.Args))
		for i, a := range x.Args {
			args[i] = exprText(a)
		}
		return exprText(x.Fun) + "(" + strings.Join(args, ", ") + ")"
	}
	return fmt.Sprintf("%T", e)
}

// renderKnownGates prints featuregates_known.go.
func renderKnownGates(gates map[string]gateSpec, version string) string {
	names := make([]string, 0, len(gates))
	for n := range gates {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, `// Code generated by go test ./cmd/ipvs-proxier -run TestKnownFeatureGates -update. DO NOT EDIT.

package main

// knownFeatureGates are the feature gates kube-proxy v%s registers, each with its
// default and lock at that version, read from the modules' source (gateSources).
var knownFeatureGates = map[string]gateSpec{
`, version)
	for _, n := range names {
		s := gates[n]
		var f []string
		if s.Default {
			f = append(f, "Default: true")
		}
		if s.Locked {
			f = append(f, "Locked: true")
		}
		if s.PreAlpha {
			f = append(f, "PreAlpha: true")
		}
		fmt.Fprintf(&b, "\t%q: {%s},\n", n, strings.Join(f, ", "))
	}
	b.WriteString("}\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		panic(err)
	}
	return string(src)
}

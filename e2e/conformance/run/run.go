package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/conformance"
	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

type options struct {
	proxies []string
	focus   string
	out     string
	procs   int
	keep    bool
	from    string
	shape   string
}

func run(o options) (int, error) {
	start := time.Now()
	selText, err := os.ReadFile(filepath.Join(harness.E2EDir(), "conformance/selection.txt"))
	if err != nil {
		return 0, err
	}
	all, err := conformance.ParseSelection(selText)
	if err != nil {
		return 0, err
	}
	shape, err := conformance.LookupShape(o.shape)
	if err != nil {
		return 0, err
	}
	sel := all.ForShape(shape.Name)
	if o.from != "" {
		report, err := fromReports(strings.Split(o.from, ","), sel)
		if err != nil {
			return 0, err
		}
		report.Shape, report.Cluster, report.Reproduce = shape.Name, clusterLines(shape), reproduce(o.procs, shape)
		out := o.out
		if out == "" {
			out = filepath.Join(harness.RepoRoot(), "docs")
		}
		return 0, writeDocs(report, out)
	}
	for _, p := range o.proxies {
		if _, ok := conformance.Lookup(p); !ok {
			return 0, fmt.Errorf("unknown proxy %q (%s)", p, strings.Join(conformance.Columns(), ", "))
		}
	}
	bins, err := buildSuite()
	if err != nil {
		return 0, err
	}
	work, err := os.MkdirTemp("", "conformance-")
	if err != nil {
		return 0, err
	}
	dnsManifest, dnsImage, err := corednsManifest(work, shape)
	if err != nil {
		return 0, err
	}
	suiteImages, err := buildSuiteImages(work, bins, dnsImage)
	if err != nil {
		return 0, err
	}
	cpBins, err := harness.BuildControlPlane()
	if err != nil {
		return 0, err
	}
	images, err := harness.BuildImages(work, cpBins)
	if err != nil {
		return 0, err
	}
	if slices.Contains(o.proxies, "kube-router") {
		kr, err := buildKubeRouterImage(work, cpBins.KubeRouter)
		if err != nil {
			return 0, err
		}
		images = append(images, kr)
	}
	c, err := startCluster(append(images, suiteImages), shape)
	if err != nil {
		return 0, err
	}
	defer c.stop()
	stopOnSignal(c)
	harness.Logf("cluster up in %v (kubeconfig %s)", time.Since(start).Round(time.Second), c.kubeconfig)
	s := suiteRun{bins: bins, kubectl: c.cp.Bins.Kubectl, kubeconfig: c.kubeconfig, dir: filepath.Join(work, "reports"), nodes: len(c.specs)}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return 0, err
	}
	candidates, err := s.candidates(sel.FocusRegex())
	if err != nil {
		return 0, err
	}
	focus := sel.FocusRegex()
	if o.focus != "" {
		if focus, err = narrowed(candidates, o.focus); err != nil {
			return 0, err
		}
		var keep []string
		re := regexp.MustCompile(o.focus) // narrowed compiled it
		for _, c := range candidates {
			if re.MatchString(c) {
				keep = append(keep, c)
			}
		}
		candidates = keep
	}
	report := &conformance.Report{Candidates: candidates, Selection: sel, Runs: map[string]*conformance.Run{},
		Shape: shape.Name, Cluster: clusterLines(shape), Reproduce: reproduce(o.procs, shape)}
	for i, p := range o.proxies {
		d, err := prepare(p, work)
		if err != nil {
			return 0, err
		}
		if i > 0 {
			harness.Logf("%s: the nodes power-cycled to start clean", p)
		}
		if err := c.deploy(d); err != nil {
			return 0, err
		}
		// CoreDNS reaches the apiserver through the `kubernetes` Service: after a proxy.
		if err := c.clusterDNS(dnsManifest); err != nil {
			return 0, err
		}
		r, err := s.run(p, sel, focus, o.procs)
		if err != nil {
			return 0, err
		}
		report.Runs[p] = r
		pass, fail, skip := report.Counts(p)
		harness.Logf("%s: %d passed, %d failed, %d skipped in %v (reports in %s)", p, pass, fail, skip, r.Wall.Round(time.Second), s.dir)
		if i < len(o.proxies)-1 {
			if err := c.remove(d); err != nil {
				return 0, err
			}
		}
	}
	out := o.out
	if out == "" && o.focus == "" && !slices.ContainsFunc(conformance.Defaults(), func(p string) bool { return !slices.Contains(o.proxies, p) }) {
		out = filepath.Join(harness.RepoRoot(), "docs")
	}
	if out == "" {
		out = s.dir
	}
	if err := writeDocs(report, out); err != nil {
		return 0, err
	}
	if o.keep {
		harness.Logf("the cluster stays up (kubeconfig %s); interrupt to stop it", c.kubeconfig)
		select {}
	}
	if len(report.Regressions()) > 0 {
		return 1, nil
	}
	return 0, nil
}

// writeDocs writes the shape's conformance.md and conformance.csv into dir
// (conformance-SHAPE.* for a shape other than ipv4: conformance.DocsName). A proxy the
// report did not run keeps the column dir's previous CSV of that shape gave it
// (Report.CarryOver): the docs written from a run of some proxies lose none of the
// others' results.
func writeDocs(report *conformance.Report, dir string) error {
	base := conformance.DocsName(report.Shape)
	if prevCSV, err := os.ReadFile(filepath.Join(dir, base+".csv")); err == nil {
		prevMD, _ := os.ReadFile(filepath.Join(dir, base+".md"))
		carried, err := report.CarryOver(prevCSV, prevMD)
		if err != nil {
			return err
		}
		if len(carried) > 0 {
			harness.Logf("carried from the previous %s/conformance.csv: %s", dir, strings.Join(carried, ", "))
		}
	}
	// The shapes table: this report's row, and each other shape's from its own page.
	rows := map[string]string{report.Shape: report.ShapeRow()}
	pages := map[string][]byte{}
	for _, sh := range conformance.Shapes {
		if sh.Name == report.Shape {
			continue
		}
		if page, err := os.ReadFile(filepath.Join(dir, conformance.DocsName(sh.Name)+".md")); err == nil {
			pages[sh.Name] = page
			if row := conformance.OwnShapeRow(page, sh.Name); row != "" {
				rows[sh.Name] = row
			}
		}
	}
	report.ShapesTable = conformance.ShapesTable(rows)
	var md, csv bytes.Buffer
	if err := report.WriteMarkdown(&md); err != nil {
		return err
	}
	if err := report.WriteCSV(&csv); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, base+".md"), md.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, base+".csv"), csv.Bytes(), 0o644); err != nil {
		return err
	}
	for name, page := range pages {
		if updated, ok := conformance.ReplaceShapesTable(page, report.ShapesTable); ok {
			if err := os.WriteFile(filepath.Join(dir, conformance.DocsName(name)+".md"), updated, 0o644); err != nil {
				return err
			}
		}
	}
	harness.Logf("%s; written to %s/%s.{md,csv}", report.Summary(), dir, base)
	return nil
}

// reproduce is the report's Reproduce section.
func reproduce(procs int, shape conformance.Shape) string {
	return "`make conformance` (CONFORMANCE_SHAPE=" + shape.Name + " CONFORMANCE_PROCS=" + fmt.Sprint(procs) + "); [e2e/conformance](../e2e/conformance/README.md) says what it builds. " +
		"`cd e2e && go run ./conformance/run -from DIR` writes the report again from a run's reports folder."
}

// clusterLines describe the cluster in the report.
func clusterLines(shape conformance.Shape) []string {
	kernel := "the Debian kernel of e2e/vm"
	if out, err := exec.Command(filepath.Join(harness.RepoRoot(), "e2e/vm/vm.sh"), "kernel").Output(); err == nil {
		kernel = "Linux " + strings.TrimPrefix(filepath.Base(strings.TrimSpace(string(out))), "vmlinuz-") + " (Debian)"
	}
	var fams, links, cidrs, services []string
	for _, f := range shape.Families {
		fams = append(fams, f.Name)
		links = append(links, fmt.Sprintf("%s0/%d", f.LinkPrefix, f.LinkBits))
		cidrs = append(cidrs, f.ClusterCIDR)
		services = append(services, f.ServiceCIDR)
	}
	family := "IPv4 only"
	if shape.DualStack() {
		family = "dual-stack, " + fams[0] + " primary (the `kubernetes` Service, kube-dns and single-stack Services are " + fams[0] + "; every node and pod has an address of each family)"
	}
	lines := []string{
		"shape `" + shape.Name + "`: " + family + "; " + fmt.Sprint(shape.Nodes) + " nodes, one zone each (`zone-a`…)",
		"Kubernetes " + harness.KubeVersion + ": kube-apiserver, etcd, kube-controller-manager (its default controllers and node IPAM) and kube-scheduler on the host; e2e.test, agnhost and the ginkgo CLI built from the same `k8s.io/kubernetes` module",
		fmt.Sprint(shape.Nodes) + " node VMs (qemu TCG, one vCPU and 3 GiB each, " + kernel + ") running kubelet " + harness.KubeVersion + ", containerd and runc from Debian bookworm",
		"pod network: Debian's CNI plugins (bridge with host-local IPAM, loopback, portmap) on each node's podCIDRs from " + strings.Join(cidrs, " and ") + ", routed between the nodes over their shared link (" + strings.Join(links, ", ") + ", the nodes' InternalIPs); Service range " + strings.Join(services, ", "),
		"the apiserver reaches the kubelets (exec, logs, port-forward) and the pods (its proxy subresources) through its egress selector: an HTTP CONNECT proxy on a unix socket that dials each node's forwarded kubelet port, or the node's agent for a pod address",
		"cluster DNS as kubeadm deploys it (CoreDNS v1.14.6, built from its module; kubeadm's printed manifest; kube-dns " + shape.Primary().DNSServiceIP + ")",
		"the suite's images (agnhost, busybox, nginx, pause, distroless-iptables, regression-issue-74839, CoreDNS) built here under their upstream names and imported into each node's containerd; nothing is pulled",
		"each proxy deployed as users deploy it: ipvs-proxier by `kubectl apply -k deploy` (its image from `make image-oci`'s build; with `rulesBackend: nftables` for its nftables column), " +
			"kube-proxy by kubeadm's DaemonSet and ConfigMap with `mode: ipvs` or `mode: nftables` (its image on the same Debian base, with nft), " +
			"kube-router " + harness.KubeRouterVersion + " as its service-proxy-only DaemonSet (`--run-router=false --run-firewall=false --run-service-proxy=true`, every Service masqueraded; built from its module, on the same base with ipset, iptables, conntrack and ip); " +
			"the nodes are power-cycled between two proxies",
	}
	if shape.Primary().Name == conformance.IPv6.Name {
		lines = append(lines, "pods reach the apiserver over IPv6 through the `kubernetes` Service's endpoint "+conformance.IPv6.APIServer+
			", an address on every node's loopback where the node's agent relays to the apiserver (qemu's user network forwards IPv4 only)")
	}
	return lines
}

// stopOnSignal stops the cluster's VMs and processes on an interrupt.
func stopOnSignal(c *cluster) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ch
		c.stop()
		os.Exit(130)
	}()
}

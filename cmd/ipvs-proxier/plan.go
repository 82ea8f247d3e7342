package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	networking "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi"
	"github.com/ipvs-proxier/ipvs-proxier/sync/reconcile"
	"github.com/ipvs-proxier/ipvs-proxier/sync/source"
)

// runPlan prints exactly what the daemon would program for the input objects, without
// touching the kernel and without privileges: it runs the daemon's sync against an
// empty in-memory kernel and prints the desired state.
func runPlan(args []string, out io.Writer) error {
	return runPlanTo(args, out, os.Stderr)
}

// runPlanTo is runPlan with the notes, warnings and problems going to errOut.
func runPlanTo(args []string, out, errOut io.Writer) error {
	o := newOptions("plan")
	o.planFlags = []string{"kubeconfig"} // the cluster to read, which --config does not replace
	var files []string
	o.fs.StringArrayVarP(&files, "filename", "f", nil, "Service, EndpointSlice and Node objects (YAML or JSON, multi-document or a List); '-' is stdin")
	strict := o.fs.Bool("strict", false, "exit non-zero when the input has problems (the daemon's Warning Events)")
	trace := o.fs.String("trace", "", "also trace one new connection through the planned rules, sets and IPVS table: \"SRC DST:PORT/PROTO\"")
	traceIn := o.fs.String("trace-in", "eth0", "the interface the traced packet arrives on (a SRC of the node's is its own traffic)")
	// --help goes to stdout, as every command's help does (status, cleanup).
	o.fs.SetOutput(out)
	o.fs.Usage = func() {
		commandUsage(out, o.fs, "ipvs-proxier plan (-f FILE... | --kubeconfig FILE) [flags]",
			"Prints what the daemon would program for the objects, in order: the IPVS table as `ipvsadm -Ln`, the dummy\n"+
				"interface's addresses, the sets as `ipset save`, the rules as iptables-restore input. It touches nothing and\n"+
				"needs no privileges. Problems the daemon would publish as Warning Events go to stderr. The daemon's flags\n"+
				"and --config apply.",
			"  ipvs-proxier plan -f examples/cluster.yaml --hostname-override test-node --cluster-cidr 10.244.0.0/16\n"+
				"  kubectl get svc,endpointslices,nodes -A -o yaml | ipvs-proxier plan -f - --hostname-override node-1\n"+
				"  ipvs-proxier plan --kubeconfig ~/.kube/config --hostname-override node-1 --strict\n"+
				"  ipvs-proxier plan -f examples/cluster.yaml --hostname-override test-node --trace '10.244.0.7 10.96.0.10:80/tcp'")
	}
	if err := o.fs.Parse(args); err != nil {
		return err
	}
	if err := noArgs(o.fs); err != nil {
		return err
	}
	if o.configFile != "" {
		warnings, err := o.applyConfigFile(o.configFile)
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintln(errOut, "warning:", w)
		}
	}
	r, err := o.resolve(os.Hostname)
	if err != nil {
		return err
	}
	for _, w := range r.warnings {
		fmt.Fprintln(errOut, "warning:", w)
	}
	src := source.NewStaticSource()
	switch {
	case len(files) > 0:
		for _, f := range files {
			if err := loadFile(f, src, r.nodeName, errOut); err != nil {
				return err
			}
		}
		if src.Node() == nil {
			// As `plan --kubeconfig` warns: without the Node, NodePorts have no node IPs
			// unless --node-ip gives them, and no endpoint is local.
			fmt.Fprintf(errOut, "warning: no Node %q in the input: no NodePorts without --node-ip, no local endpoints (set --hostname-override)\n", r.nodeName)
		}
	case o.kubeconfig != "" || o.master != "":
		if err := loadCluster(o, src, r.nodeName, errOut); err != nil {
			return err
		}
	default:
		return fmt.Errorf("plan needs -f FILE or --kubeconfig")
	}
	fake := kernel.NewFake()
	problems := &problemList{}
	r.sync.Events = problems
	s := reconcile.NewSyncer(r.sync, fake.Kernel(), src, source.NewTracker(nil))
	if err := s.Sync(); err != nil {
		return err
	}
	cfg := s.Config()
	if _, err = io.WriteString(out, s.Desired().Plan(&cfg)); err != nil {
		return err
	}
	if *trace != "" {
		p, err := parseTracePacket(*trace, *traceIn, cfg.NodeIPs, s.Desired().Addresses())
		if err != nil {
			return err
		}
		if err := printTrace(out, fake, p, cfg.NodeIPs); err != nil {
			return err
		}
	}
	lines := problems.lines()
	for _, l := range lines {
		fmt.Fprintln(errOut, "problem:", l)
	}
	if *strict && len(lines) > 0 {
		return fmt.Errorf("%d problem(s) in the input (--strict)", len(lines))
	}
	return nil
}

// problemList collects what the daemon would publish as Warning Events.
type problemList struct{ got []proxier.Problem }

func (p *problemList) Warn(pr proxier.Problem) { p.got = append(p.got, pr) }

// lines returns one sorted line per distinct problem: "Kind namespace/name: Reason: message".
func (p *problemList) lines() []string {
	var out []string
	for _, pr := range p.got {
		out = append(out, pr.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func loadFile(name string, src *source.StaticSource, node string, errOut io.Writer) error {
	f := os.Stdin
	if name != "-" {
		var err error
		if f, err = os.Open(name); err != nil {
			return err
		}
		defer f.Close()
	}
	notes, err := source.LoadObjects(f, src, node)
	for _, n := range notes {
		fmt.Fprintf(errOut, "note: %s: %s\n", name, n)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// loadCluster reads Services, EndpointSlices and the Node from a live cluster, once.
func loadCluster(o *options, src *source.StaticSource, node string, errOut io.Writer) error {
	cfg, _, err := restConfig(o)
	if err != nil {
		return err
	}
	c, err := kubeapi.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	svcs, err := kubeapi.ListAs[*v1.ServiceList](ctx, c, kubeapi.Services, "", metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range svcs.Items {
		src.SetService(&svcs.Items[i])
	}
	slices, err := kubeapi.ListAs[*discovery.EndpointSliceList](ctx, c, kubeapi.EndpointSlices, "",
		metav1.ListOptions{LabelSelector: "!" + proxier.LabelHeadless})
	if err != nil {
		return err
	}
	for i := range slices.Items {
		src.SetSlice(&slices.Items[i])
	}
	if cidrs, err := kubeapi.ListAs[*networking.ServiceCIDRList](ctx, c, kubeapi.ServiceCIDRs, "", metav1.ListOptions{}); err == nil {
		for i := range cidrs.Items {
			src.AddServiceCIDRs(&cidrs.Items[i])
		}
	} else {
		fmt.Fprintf(errOut, "warning: ServiceCIDRs: %v (the unallocated-ClusterIP check uses --service-cluster-ip-range)\n", err)
	}
	nodes, err := kubeapi.ListAs[*v1.NodeList](ctx, c, kubeapi.Nodes, "",
		metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", node).String()})
	if err == nil && len(nodes.Items) != 1 {
		err = fmt.Errorf("not found")
	}
	if err == nil {
		src.SetNode(&nodes.Items[0])
	} else {
		src.SetNode(&v1.Node{})
		fmt.Fprintf(errOut, "warning: node %s: %v\n", node, err)
	}
	return nil
}

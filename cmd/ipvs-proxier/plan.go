package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync"
)

// runPlan prints exactly what the daemon would program for the input objects, without
// touching the kernel and without privileges: it runs the daemon's sync against an
// empty in-memory kernel and prints the desired state.
func runPlan(args []string, out io.Writer) error {
	o := newOptions("plan")
	var files []string
	o.fs.StringArrayVarP(&files, "filename", "f", nil, "Service, EndpointSlice and Node objects (YAML or JSON, multi-document or a List); '-' is stdin")
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
			fmt.Fprintln(os.Stderr, "warning:", w)
		}
	}
	r, err := o.resolve(os.Hostname)
	if err != nil {
		return err
	}
	src := sync.NewStaticSource()
	switch {
	case len(files) > 0:
		for _, f := range files {
			if err := loadFile(f, src, r.nodeName); err != nil {
				return err
			}
		}
	case o.kubeconfig != "" || o.master != "":
		if err := loadCluster(o, src, r.nodeName); err != nil {
			return err
		}
	default:
		return fmt.Errorf("plan needs -f FILE or --kubeconfig")
	}
	if r.primaryNodePorts {
		r.sync.Config.NodePortAddresses = append(r.sync.Config.NodePortAddresses, hostPrefixes(sync.NodeAddresses(src.Node()))...)
	}
	fake := kernel.NewFake()
	s := sync.NewSyncer(r.sync, fake.Kernel(), src, sync.NewTracker(nil))
	if err := s.Sync(); err != nil {
		return err
	}
	cfg := s.Config()
	_, err = io.WriteString(out, s.Desired().Plan(&cfg))
	return err
}

// hostPrefixes turns addresses into /32 and /128 prefixes.
func hostPrefixes(ips []netip.Addr) []netip.Prefix {
	var out []netip.Prefix
	for _, ip := range ips {
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out
}

func loadFile(name string, src *sync.StaticSource, node string) error {
	f := os.Stdin
	if name != "-" {
		var err error
		if f, err = os.Open(name); err != nil {
			return err
		}
		defer f.Close()
	}
	if err := sync.LoadObjects(f, src, node); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// loadCluster reads Services, EndpointSlices and the Node from a live cluster, once.
func loadCluster(o *options, src *sync.StaticSource, node string) error {
	cfg, _, err := restConfig(o)
	if err != nil {
		return err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	svcs, err := c.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range svcs.Items {
		src.SetService(&svcs.Items[i])
	}
	slices, err := c.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{LabelSelector: "!" + proxier.LabelHeadless})
	if err != nil {
		return err
	}
	for i := range slices.Items {
		src.SetSlice(&slices.Items[i])
	}
	n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err == nil {
		src.SetNode(n)
	} else {
		src.SetNode(&v1.Node{})
		fmt.Fprintf(os.Stderr, "warning: node %s: %v\n", node, err)
	}
	return nil
}

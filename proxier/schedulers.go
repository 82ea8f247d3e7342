package proxier

import (
	"fmt"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
)

// schedulerFor picks the scheduler and scheduler flags of a Service: the annotation if it
// is valid, else the default (with a Problem naming the bad annotation). mh gets the
// port flag by default, as kube-proxy sets it (pkg/proxy/ipvs/proxier.go). sh and mh
// always get their fallback flag: a real server draining at weight 0 keeps its hash
// buckets, and without the flag the clients hashed to it are refused ("no destination
// available", kubernetes#139497); with it they go to an available server, and nothing
// changes while every server is available (net/netfilter/ipvs/ip_vs_sh.c, ip_vs_mh.c).
func schedulerFor(cfg *Config, svc *Service, probs *[]Problem) (string, uint32) {
	sched, flags := schedulerAndFlags(cfg, svc, probs)
	if sched == "sh" || sched == "mh" {
		flags |= kernel.FlagSched1
	}
	return sched, flags
}

// kube-router's service proxy reads a Service's scheduler and its flags from these
// annotations (pkg/controllers/proxy/network_services_controller.go): a Service moved
// from it keeps them, read as aliases of ours, which win when both are set. Its flags
// are flag-1, flag-2 and flag-3, the kernel's IP_VS_SVC_F_SCHED1..3: for sh and mh the
// fallback and the port (ip_vs_sh.c, ip_vs_mh.c); flag-3 means nothing to either. Where
// kube-router drops a value it cannot honour without a word (an unknown scheduler is rr,
// flags are read for mh only), it gets the Warning ours would.
const (
	KubeRouterAnnotationScheduler      = "kube-router.io/service.scheduler"
	KubeRouterAnnotationSchedulerFlags = "kube-router.io/service.schedflags"
)

// schedulerAnnotations are the annotations schedulerFor reads, the ones a Service keeps.
var schedulerAnnotations = []string{AnnotationScheduler, KubeRouterAnnotationScheduler, AnnotationSchedulerFlags, KubeRouterAnnotationSchedulerFlags}

// annotation returns the value of the first of names that svc sets, and its name.
func annotation(svc *Service, names ...string) (value, name string, ok bool) {
	for _, n := range names {
		if v, ok := svc.rare().annotations[n]; ok {
			return v, n, true
		}
	}
	return "", "", false
}

// kubeRouterFlags rewrites kube-router's flag-N names into ours for scheduler sched
// (flag-1 is sched-fallback, flag-2 sched-port); any other name is kept, to be refused.
func kubeRouterFlags(sched, s string) string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		switch f = strings.TrimSpace(f); f {
		case "flag-1":
			f = sched + "-fallback"
		case "flag-2":
			f = sched + "-port"
		}
		out = append(out, f)
	}
	return strings.Join(out, ",")
}

func schedulerAndFlags(cfg *Config, svc *Service, probs *[]Problem) (string, uint32) {
	sched := cfg.Scheduler
	if a, name, ok := annotation(svc, AnnotationScheduler, KubeRouterAnnotationScheduler); ok {
		if err := ValidateScheduler(a); err != nil {
			*probs = append(*probs, serviceProblem(svc, "InvalidScheduler",
				fmt.Sprintf("annotation %s: %v; using %q", name, err, sched)))
		} else {
			sched = a
		}
	}
	a, name, ok := annotation(svc, AnnotationSchedulerFlags, KubeRouterAnnotationSchedulerFlags)
	if !ok {
		if sched == "mh" {
			return sched, kernel.FlagSched2
		}
		return sched, 0
	}
	if name == KubeRouterAnnotationSchedulerFlags {
		a = kubeRouterFlags(sched, a)
	}
	flags, err := parseSchedulerFlags(sched, a)
	if err != nil {
		*probs = append(*probs, serviceProblem(svc, "InvalidSchedulerFlags",
			fmt.Sprintf("annotation %s: %v; ignored", name, err)))
		if sched == "mh" {
			return sched, kernel.FlagSched2
		}
		return sched, 0
	}
	return sched, flags
}

// parseSchedulerFlags reads "sh-fallback,sh-port" style flags, as ipvsadm -b takes them.
func parseSchedulerFlags(sched, s string) (uint32, error) {
	var flags uint32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		prefix, name, _ := strings.Cut(f, "-")
		if prefix != sched || (sched != "sh" && sched != "mh") {
			return 0, fmt.Errorf("flag %q does not apply to scheduler %q", f, sched)
		}
		switch name {
		case "fallback":
			flags |= kernel.FlagSched1
		case "port":
			flags |= kernel.FlagSched2
		default:
			return 0, fmt.Errorf("unknown flag %q", f)
		}
	}
	return flags, nil
}

func serviceProblem(svc *Service, reason, msg string) Problem {
	return Problem{Kind: "Service", Namespace: svc.namespace, Name: svc.name, Reason: reason, Message: BoundMessage(msg)}
}

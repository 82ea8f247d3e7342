package source

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/proxier/compact"
)

// compactService is what the informer cache keeps of a Service: the fields
// proxier.Translate and the critical-Services pass read, in about a fifth of a decoded
// v1.Service's memory (BenchmarkRetainedObjects30k). Its strings share one allocation
// (compact.Arena) or are interned (namespace, type, policies, port names); the fields most
// Services leave empty are behind one pointer. Cached objects are read-only: Service
// turns one back into a v1.Service for the translation.
type compactService struct {
	objMeta
	// clusterIP is Spec.ClusterIP; it shares clusterIPs[0]'s bytes when equal.
	clusterIP  string
	clusterIPs []string
	ports      []servicePort
	typ        v1.ServiceType
	affinity   v1.ServiceAffinity
	etp        v1.ServiceExternalTrafficPolicy
	itp        *v1.ServiceInternalTrafficPolicy
	rare       *serviceRare
}

// servicePort is what the translation reads of a ServicePort.
type servicePort struct {
	name           string
	protocol       v1.Protocol
	port, nodePort int32
}

// serviceRare holds what most Services leave empty.
type serviceRare struct {
	// labels and annotations keep only keptServiceLabels and keptServiceAnnotations.
	labels, annotations map[string]string
	externalIPs         []string
	sourceRanges        []string
	ingress             []v1.LoadBalancerIngress // IP and IPMode only
	affinityConfig      *v1.SessionAffinityConfig
	healthCheckNodePort int32
}

// The labels and annotations of a Service anything here reads: the translation's
// (service-proxy-name, the scheduler annotations and their kube-router aliases) and the
// critical-Services pass's (k8s-app, which marks the cluster DNS).
var (
	keptServiceLabels      = []string{proxier.LabelServiceProxyName, "k8s-app"}
	keptServiceAnnotations = []string{proxier.AnnotationScheduler, proxier.KubeRouterAnnotationScheduler,
		proxier.AnnotationSchedulerFlags, proxier.KubeRouterAnnotationSchedulerFlags}
)

// itpValues are the shared internalTrafficPolicy values.
var itpValues = map[v1.ServiceInternalTrafficPolicy]*v1.ServiceInternalTrafficPolicy{}

func init() {
	for _, p := range []v1.ServiceInternalTrafficPolicy{v1.ServiceInternalTrafficPolicyCluster, v1.ServiceInternalTrafficPolicyLocal} {
		itpValues[p] = &p
	}
}

// packService makes the compact form of svc.
func packService(svc *v1.Service) *compactService {
	sp := &svc.Spec
	c := &compactService{
		typ:      v1.ServiceType(compact.Value(string(sp.Type))),
		affinity: v1.ServiceAffinity(compact.Value(string(sp.SessionAffinity))),
		etp:      v1.ServiceExternalTrafficPolicy(compact.Value(string(sp.ExternalTrafficPolicy))),
	}
	if p := sp.InternalTrafficPolicy; p != nil {
		if c.itp = itpValues[*p]; c.itp == nil {
			v := *p
			c.itp = &v
		}
	}
	var a compact.Arena
	c.objMeta.namespace = compact.Value(svc.Namespace)
	a.Add(&c.objMeta.name, svc.Name)
	a.Add(&c.objMeta.rv, svc.ResourceVersion)
	c.clusterIPs = a.Strings(sp.ClusterIPs)
	sharesFirst := len(sp.ClusterIPs) > 0 && sp.ClusterIP == sp.ClusterIPs[0]
	if !sharesFirst {
		a.Add(&c.clusterIP, sp.ClusterIP)
	}
	if len(sp.Ports) > 0 {
		c.ports = make([]servicePort, len(sp.Ports))
		for i, p := range sp.Ports {
			c.ports[i] = servicePort{name: compact.Value(p.Name), protocol: v1.Protocol(compact.Value(string(p.Protocol))), port: p.Port, nodePort: p.NodePort}
		}
	}
	c.rare = packRare(svc, &a)
	a.Seal()
	if sharesFirst {
		c.clusterIP = c.clusterIPs[0]
	}
	return c
}

// packRare returns the rare part of svc, or nil when it has none.
func packRare(svc *v1.Service, a *compact.Arena) *serviceRare {
	sp := &svc.Spec
	r := &serviceRare{labels: keep(svc.Labels, keptServiceLabels), annotations: keep(svc.Annotations, keptServiceAnnotations),
		affinityConfig: sp.SessionAffinityConfig, healthCheckNodePort: sp.HealthCheckNodePort}
	r.externalIPs = a.Strings(sp.ExternalIPs)
	r.sourceRanges = a.Strings(sp.LoadBalancerSourceRanges)
	if in := svc.Status.LoadBalancer.Ingress; len(in) > 0 {
		r.ingress = make([]v1.LoadBalancerIngress, len(in))
		for i, ing := range in {
			a.Add(&r.ingress[i].IP, ing.IP)
			r.ingress[i].IPMode = ing.IPMode
		}
	}
	if r.labels == nil && r.annotations == nil && r.externalIPs == nil && r.sourceRanges == nil && r.ingress == nil &&
		r.affinityConfig == nil && r.healthCheckNodePort == 0 {
		return nil
	}
	return r
}

// service returns the v1.Service the translation reads: a new object, with only the
// fields the compact form keeps.
func (c *compactService) service() *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: c.name, ResourceVersion: c.rv},
		Spec: v1.ServiceSpec{Type: c.typ, ClusterIP: c.clusterIP, ClusterIPs: c.clusterIPs, SessionAffinity: c.affinity,
			ExternalTrafficPolicy: c.etp, InternalTrafficPolicy: c.itp},
	}
	if len(c.ports) > 0 {
		svc.Spec.Ports = make([]v1.ServicePort, len(c.ports))
		for i, p := range c.ports {
			svc.Spec.Ports[i] = v1.ServicePort{Name: p.name, Protocol: p.protocol, Port: p.port, NodePort: p.nodePort}
		}
	}
	if r := c.rare; r != nil {
		svc.Labels, svc.Annotations = r.labels, r.annotations
		svc.Spec.ExternalIPs, svc.Spec.LoadBalancerSourceRanges = r.externalIPs, r.sourceRanges
		svc.Spec.SessionAffinityConfig, svc.Spec.HealthCheckNodePort = r.affinityConfig, r.healthCheckNodePort
		svc.Status.LoadBalancer.Ingress = r.ingress
	}
	return svc
}

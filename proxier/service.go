package proxier

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"reflect"

	"github.com/ipvs-proxier/ipvs-proxier/proxier/compact"
)

// LabelK8sApp names a Service's application; the critical-Services pass finds the
// cluster DNS by it (k8s-app=kube-dns, as kubeadm labels it).
const LabelK8sApp = "k8s-app"

// Service is what the translation reads of a v1.Service, and the form the informer cache
// keeps: the fields Translate and the critical-Services pass read, in about a fifth of a
// decoded v1.Service's memory (BenchmarkRetainedObjects30k in sync/source). Its strings
// share one allocation (compact.Arena) or are interned (namespace, type, policies, port
// names); the fields most Services leave empty are behind one pointer. A Service is made
// by NewService only and is read-only: the informer cache hands the same one to every
// reader. It is a metav1.Object for the informer, which reads its namespace, name and
// resourceVersion (the rest is compact.NoMeta's).
type Service struct {
	compact.NoMeta
	namespace, name, resourceVersion string
	// clusterIP is Spec.ClusterIP; it shares clusterIPs[0]'s bytes when equal.
	clusterIP  string
	clusterIPs []string
	ports      []servicePort
	typ        v1.ServiceType
	affinity   v1.ServiceAffinity
	etp        v1.ServiceExternalTrafficPolicy
	itp        *v1.ServiceInternalTrafficPolicy
	// more is nil for a Service that sets none of the rare fields (rare).
	more *serviceRare
}

// servicePort is what the translation reads of a ServicePort.
type servicePort struct {
	name           string
	protocol       v1.Protocol
	port, nodePort int32
}

// serviceRare holds what most Services leave empty.
type serviceRare struct {
	// labels and annotations keep only keptLabels and keptAnnotations.
	labels, annotations map[string]string
	externalIPs         []string
	sourceRanges        []string
	ingress             []v1.LoadBalancerIngress // IP and IPMode only
	affinityConfig      *v1.SessionAffinityConfig
	healthCheckNodePort int32
}

// The labels and annotations a Service keeps: the translation's (service-proxy-name, the
// scheduler annotations and their kube-router aliases) and the critical-Services pass's
// (k8s-app).
var (
	keptLabels      = []string{LabelServiceProxyName, LabelK8sApp}
	keptAnnotations = schedulerAnnotations
)

// itpValues are the shared internalTrafficPolicy values.
var itpValues = map[v1.ServiceInternalTrafficPolicy]*v1.ServiceInternalTrafficPolicy{}

func init() {
	for _, p := range []v1.ServiceInternalTrafficPolicy{v1.ServiceInternalTrafficPolicyCluster, v1.ServiceInternalTrafficPolicyLocal} {
		itpValues[p] = &p
	}
}

// NewService returns the form of svc the translation reads (nil for nil): the one
// conversion from the API's object, for the informers' transform, the static source
// (`plan`, the critical-Services pass) and the tests. It copies what it keeps, except
// the session affinity config and the ingress IP modes, which it shares with svc.
func NewService(svc *v1.Service) *Service {
	if svc == nil {
		return nil
	}
	sp := &svc.Spec
	s := &Service{
		typ:      v1.ServiceType(compact.Value(string(sp.Type))),
		affinity: v1.ServiceAffinity(compact.Value(string(sp.SessionAffinity))),
		etp:      v1.ServiceExternalTrafficPolicy(compact.Value(string(sp.ExternalTrafficPolicy))),
	}
	if p := sp.InternalTrafficPolicy; p != nil {
		if s.itp = itpValues[*p]; s.itp == nil {
			v := *p
			s.itp = &v
		}
	}
	var a compact.Arena
	s.namespace = compact.Value(svc.Namespace)
	a.Add(&s.name, svc.Name)
	a.Add(&s.resourceVersion, svc.ResourceVersion)
	s.clusterIPs = a.Strings(sp.ClusterIPs)
	sharesFirst := len(sp.ClusterIPs) > 0 && sp.ClusterIP == sp.ClusterIPs[0]
	if !sharesFirst {
		a.Add(&s.clusterIP, sp.ClusterIP)
	}
	if len(sp.Ports) > 0 {
		s.ports = make([]servicePort, len(sp.Ports))
		for i, p := range sp.Ports {
			s.ports[i] = servicePort{name: compact.Value(p.Name), protocol: v1.Protocol(compact.Value(string(p.Protocol))), port: p.Port, nodePort: p.NodePort}
		}
	}
	s.more = newServiceRare(svc, &a)
	a.Seal()
	if sharesFirst {
		s.clusterIP = s.clusterIPs[0]
	}
	return s
}

// newServiceRare returns the rare part of svc, or nil when it has none.
func newServiceRare(svc *v1.Service, a *compact.Arena) *serviceRare {
	sp := &svc.Spec
	r := &serviceRare{labels: keep(svc.Labels, keptLabels), annotations: keep(svc.Annotations, keptAnnotations),
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
	// Every field, so that a field added to serviceRare is never dropped for a Service
	// where it is the only rare one set.
	if reflect.ValueOf(*r).IsZero() {
		return nil
	}
	return r
}

// keep returns the listed keys of in, or nil for none.
func keep(in map[string]string, keys []string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := in[k]; ok {
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = v
		}
	}
	return out
}

// noRare is the rare part of a Service that has none.
var noRare serviceRare

// rare returns the rare part of s, empty when it has none.
func (s *Service) rare() *serviceRare {
	if s.more == nil {
		return &noRare
	}
	return s.more
}

var _ metav1.Object = (*Service)(nil)

// GetNamespace returns the Service's namespace (metav1.Object).
func (s *Service) GetNamespace() string { return s.namespace }

// GetName returns the Service's name (metav1.Object).
func (s *Service) GetName() string { return s.name }

// GetResourceVersion returns the Service's resourceVersion (metav1.Object).
func (s *Service) GetResourceVersion() string { return s.resourceVersion }

// Key returns the Service's namespace/name.
func (s *Service) Key() ServiceKey { return ServiceKey{Namespace: s.namespace, Name: s.name} }

// Label returns the value of one of the labels a Service keeps (LabelServiceProxyName,
// LabelK8sApp), "" if it is not set.
func (s *Service) Label(key string) string { return s.rare().labels[key] }

package kubeapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	networking "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Client is the daemon's API client: one REST client per API group over one shared
// transport and one rate limiter (QPS, burst), as client-go's clientset builds them.
type Client struct {
	core, discovery, networking *rest.RESTClient
}

// NewForConfig returns a Client for c (kube-api-qps, kube-api-burst, content types and
// the kubeconfig's TLS and compression settings are c's).
func NewForConfig(c *rest.Config) (*Client, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("kube-api-burst must be above 0 when kube-api-qps is")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	hc, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	var cl Client
	for _, g := range []struct {
		to   **rest.RESTClient
		path string
		gv   schema.GroupVersion
	}{
		{&cl.core, "/api", v1.SchemeGroupVersion},
		{&cl.discovery, "/apis", discovery.SchemeGroupVersion},
		{&cl.networking, "/apis", networking.SchemeGroupVersion},
	} {
		if *g.to, err = groupClient(cfg, hc, g.path, g.gv); err != nil {
			return nil, err
		}
	}
	return &cl, nil
}

// groupClient is one group's REST client, set up as client-go's generated ones.
func groupClient(cfg rest.Config, hc *http.Client, path string, gv schema.GroupVersion) (*rest.RESTClient, error) {
	cfg.APIPath, cfg.GroupVersion = path, &gv
	cfg.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, Codecs).WithoutConversion()
	return rest.RESTClientForConfigAndClient(&cfg, hc)
}

// request starts a GET of r in namespace with o, as client-go's generated List and
// Watch do: protobuf unless a content type was configured, the options' timeout.
func (c *Client) request(r Resource, namespace string, o *metav1.ListOptions) *rest.Request {
	rc, scoped := c.core, r == Services
	switch r {
	case EndpointSlices:
		rc, scoped = c.discovery, true
	case ServiceCIDRs:
		rc = c.networking
	}
	var timeout time.Duration
	if o.TimeoutSeconds != nil {
		timeout = time.Duration(*o.TimeoutSeconds) * time.Second
	}
	return rc.Get().UseProtobufAsDefault().NamespaceIfScoped(namespace, scoped && namespace != "").
		Resource(r.String()).VersionedParams(o, parameters).Timeout(timeout)
}

// List implements API.
func (c *Client) List(ctx context.Context, r Resource, namespace string, o metav1.ListOptions) (runtime.Object, error) {
	var into runtime.Object
	switch r {
	case Services:
		into = &v1.ServiceList{}
	case EndpointSlices:
		into = &discovery.EndpointSliceList{}
	case Nodes:
		into = &v1.NodeList{}
	case ServiceCIDRs:
		into = &networking.ServiceCIDRList{}
	default:
		return nil, fmt.Errorf("list %s: not a resource of the proxy", r)
	}
	if err := c.request(r, namespace, &o).Do(ctx).Into(into); err != nil {
		return nil, err
	}
	return into, nil
}

// Watch implements API.
func (c *Client) Watch(ctx context.Context, r Resource, namespace string, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return c.request(r, namespace, &o).Watch(ctx)
}

// Version asks the API server for /version: the daemon's reachability probe.
func (c *Client) Version(ctx context.Context) error {
	return c.core.Get().AbsPath("/version").Do(ctx).Error()
}

// Events returns a record.EventSink writing core/v1 Events into each Event's own
// namespace, as client-go's EventSinkImpl.
func (c *Client) Events() *EventSink { return &EventSink{rc: c.core} }

// EventSink implements k8s.io/client-go/tools/record.EventSink.
type EventSink struct{ rc *rest.RESTClient }

// Create posts a new Event.
func (s *EventSink) Create(e *v1.Event) (*v1.Event, error) {
	out := &v1.Event{}
	err := s.rc.Post().NamespaceIfScoped(e.Namespace, e.Namespace != "").Resource("events").
		Body(e).Do(context.Background()).Into(out)
	return out, err
}

// Update replaces an Event (its series count).
func (s *EventSink) Update(e *v1.Event) (*v1.Event, error) {
	out := &v1.Event{}
	err := s.rc.Put().NamespaceIfScoped(e.Namespace, e.Namespace != "").Resource("events").Name(e.Name).
		Body(e).Do(context.Background()).Into(out)
	return out, err
}

// Patch applies a strategic-merge patch to an Event.
func (s *EventSink) Patch(e *v1.Event, data []byte) (*v1.Event, error) {
	out := &v1.Event{}
	err := s.rc.Patch(types.StrategicMergePatchType).NamespaceIfScoped(e.Namespace, e.Namespace != "").
		Resource("events").Name(e.Name).Body(data).Do(context.Background()).Into(out)
	return out, err
}

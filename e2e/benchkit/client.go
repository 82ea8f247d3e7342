package benchkit

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// LoaderClient is a client for loading the workload: cfg's, speaking protobuf (as
// kube-proxy and the daemon do) instead of JSON, and with a client-side rate limit
// above what the apiserver can take. Loading 30,000 Services kept the apiserver at
// one full core of the two-core host, decoding JSON among the rest.
func LoaderClient(cfg *rest.Config) (kubernetes.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c.QPS, c.Burst = 2000, 4000
	return kubernetes.NewForConfig(c)
}

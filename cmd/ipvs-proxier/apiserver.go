package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ipvs-proxier/ipvs-proxier/sync/health"
	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi"
)

// apiProbeInterval is how often a daemon that cannot reach the API server (or has not
// listed yet) probes it and says so in the log.
const apiProbeInterval = 10 * time.Second

// restConfig builds the API client config: the kubeconfig (flag or
// clientConnection.kubeconfig) when set, else in-cluster config. inCluster tells which.
func restConfig(o *options) (cfg *rest.Config, inCluster bool, err error) {
	if o.kubeconfig == "" && o.master == "" {
		cfg, err = rest.InClusterConfig()
		inCluster = true
	} else {
		if o.kubeconfig != "" {
			if _, serr := os.Stat(o.kubeconfig); serr != nil {
				return nil, false, fmt.Errorf("%s: %w (kubeadm keeps this file as the kubeconfig.conf key of its kube-proxy ConfigMap; "+
					"deploy/base/configmap.yaml carries one: set its server to the control-plane endpoint)", o.origin("kubeconfig"), serr)
			}
		}
		cfg, err = clientcmd.BuildConfigFromFlags(o.master, o.kubeconfig)
	}
	if err != nil {
		return nil, false, err
	}
	cfg.QPS, cfg.Burst = o.apiQPS, o.apiBurst
	// Protobuf by default, as kube-proxy (clientConnection.contentType): at 30,000
	// Services decoding JSON costs several times the CPU and garbage. Every type we read
	// or write has a protobuf form; JSON stays accepted for anything that has not.
	cfg.ContentType, cfg.AcceptContentTypes = o.apiContentType, o.apiAccept
	if cfg.AcceptContentTypes == "" && cfg.ContentType == runtime.ContentTypeProtobuf {
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	cfg.UserAgent = "ipvs-proxier/" + version
	return cfg, inCluster, nil
}

// warnInCluster explains why in-cluster config is fragile for a service proxy: under a
// kubelet, KUBERNETES_SERVICE_HOST is the `kubernetes` Service's ClusterIP, which only a
// service proxy makes reachable, so a node with no proxy state never starts. kubeadm's
// kube-proxy avoids it with a kubeconfig naming the control-plane endpoint.
func warnInCluster(log *zap.Logger, server string) {
	log.Warn("In-cluster config dials the API server through the kubernetes Service, which only a service proxy makes reachable; "+
		"a node with no proxy state (new, rebooted, kube-proxy removed) cannot start. Set clientConnection.kubeconfig to a kubeconfig "+
		"whose server is the control-plane endpoint (deploy/base/configmap.yaml's kubeconfig.conf)", zap.String("server", server))
}

// watchAPIServer probes the API server while the informers have not synced or a watch
// failed, logs each failed probe (so a stuck start says, every apiProbeInterval, what it
// dials and why it fails) and feeds /readyz and /status through api.
func watchAPIServer(ctx context.Context, log *zap.Logger, client *kubeapi.Client, api *health.APIServer, synced func() bool) {
	start := time.Now()
	failing := false
	probe := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, apiProbeInterval/2)
		defer cancel()
		return client.Version(ctx)
	}
	api.Watch(ctx, apiProbeInterval, synced, probe, func(err error, synced bool) {
		switch {
		case err != nil && !synced:
			log.Warn("Cannot reach the API server; nothing is programmed until it answers", zap.String("server", api.Server),
				zap.Error(err), zap.Duration("waited", time.Since(start).Round(time.Second)))
		case err != nil:
			log.Warn("Cannot reach the API server; the programmed state is kept and forwards traffic", zap.String("server", api.Server),
				zap.Error(err), zap.Time("since", api.State().Since))
		case failing:
			log.Info("API server reachable again", zap.String("server", api.Server))
		case !synced:
			log.Info("Waiting for the first list of Services, EndpointSlices and the Node", zap.String("server", api.Server),
				zap.Duration("waited", time.Since(start).Round(time.Second)))
		}
		failing = err != nil
	})
}

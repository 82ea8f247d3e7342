//go:build tools

// Package apiservers pins kube-apiserver v1.36 (k8s.io/kubernetes v1.36.3) and the etcd its
// kubeadm deploys (v3.6.8), which `make e2e-skew` builds and runs our daemon against.
package apiservers

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)

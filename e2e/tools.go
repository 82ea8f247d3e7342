//go:build tools

// Package e2e holds the end-to-end harness. This file pins the binaries it builds from
// the Go module proxy: kubeadm, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
// kube-proxy and kubectl from k8s.io/kubernetes, and etcd.
// Keeping them in this module keeps k8s.io/kubernetes out of the daemon's dependencies.
package e2e

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)

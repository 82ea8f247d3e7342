//go:build tools

// Package suite pins the upstream Kubernetes e2e binaries the conformance harness builds:
// e2e.test (package k8s.io/kubernetes/test/e2e), the ginkgo CLI that runs it in parallel,
// regression-issue-74839 (an image the conntrack tests run) and agnhost, the image most of the
// Service tests run. Its own module, so the suite's large dependency graph stays out of
// the e2e module that `make test` downloads.
package suite

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "k8s.io/kubernetes/test/e2e"
	_ "k8s.io/kubernetes/test/images/agnhost"
	_ "k8s.io/kubernetes/test/images/regression-issue-74839"
)

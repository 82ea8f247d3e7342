# ipvs-proxier. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCHSTAT := golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
BIN := bin/ipvs-proxier
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# RELEASE is the image tag deploy/base/daemonset.yaml pins (a unit test keeps the two equal).
RELEASE := v0.1.0
IMAGE ?= ghcr.io/ipvs-proxier/ipvs-proxier:$(RELEASE)

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

build: ## Build the static binary into bin/
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/ipvs-proxier

test: ## Everything CI runs: lint, unit, host-netns, real-kernel VM (both rules backends), e2e (with the kubelet tier) and image tests, one proof of each behaviour (the e2e's Kubernetes builds start niced beside lint)
	@mkdir -p bin && echo "prebuild: the e2e's Kubernetes binaries build niced in the background (log: bin/prebuild.log)"
	@# setsid gives the builds their own process group to kill, and also their own session; with
	@# CONFIG_SCHED_AUTOGROUP a session is a scheduling group that gets an equal share of the CPU
	@# whatever its tasks' nice (sched(7), "The autogroup feature"), so the group itself is niced too.
	@setsid nice -n 19 sh -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec "$$0" --no-print-directory prebuild' $(MAKE) >bin/prebuild.log 2>&1 & pid=$$!; \
	trap 'kill -- -$$pid 2>/dev/null; kill $$pid 2>/dev/null' EXIT; \
	$(MAKE) --no-print-directory deps lint test-unit test-netns test-vm e2e test-image $(TEST_ALL_TIERS)
	@echo "make $(if $(TEST_ALL_TIERS),test-all,test): all tiers passed"

test-all: ## make test and the proofs it leaves out: the e2e Service tests again on the nftables backend (e2e-nftables), the apiserver versions (e2e-skew), the netns tests again in the VM, the reboot, the 2.5-minute outage, each migration, README's backend switch, three random differential seeds, the image's second build (not in CI)
	IPVS_PROXIER_TEST_ALL=1 $(MAKE) --no-print-directory test TEST_ALL_TIERS='e2e-nftables e2e-skew'

deps: ## Install the host packages every tier needs (the one list: e2e/hostdeps/packages.txt); silent when all are there
	./e2e/hostdeps/install.sh

prebuild: ## Build the Kubernetes binaries the e2e runs (kube-apiserver, etcd, kubectl, kube-proxy, kube-router, kubeadm, kubelet tier) into the cache
	cd e2e && $(GO) run ./harness/buildcp -kubeadm -kubelet

test-unit: ## Unit tests (no privileges, fake kernel), with the fuzz seeds
	$(GO) test -count=1 ./...

test-netns: deps ## Real netlink ipset/conntrack/address tests in a fresh netns on this host (root)
	./kernel/linux/hosttest.sh

test-vm: deps ## Real-kernel tests in a qemu VM (IPVS, dummy, real packets); the first run fetches the kernel
	@mkdir -p bin
	set -o pipefail && ./e2e/vm/kernel-tests.sh 2>&1 | tee bin/test-vm.log || { awk -f e2e/failsummary.awk bin/test-vm.log; exit 1; }

lint: ## gofmt, go vet and staticcheck (pinned, through go run)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd e2e && $(GO) vet ./...
	cd e2e/image && $(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@# Every program the repository runs is on the host-package list (e2e/hostdeps).
	cd e2e && $(GO) test -count=1 ./hostdeps
	@# The repository speaks of the product: no numbered work sessions, stops or internal
	@# issue numbers (a comment cites the mechanism, a public issue or a make target).
	@bad=$$(git grep -n -E '\b([Ss]ession|[Ss]top) [0-9]+|\b[Ii]ssues? [0-9]+\b' -- . ':!*go.sum' | grep -vE 'kubernetes#|/issues/[0-9]|#[0-9]{3,}'); \
	if [ -n "$$bad" ]; then echo "internal work references; cite the mechanism, a public issue or a make target:"; echo "$$bad"; exit 1; fi

FUZZTIME ?= 60s
fuzz: ## Fuzz the translation, whole clusters (loader, syncer, plan) and --config, FUZZTIME each (60s); make test runs their seeds
	$(GO) test ./proxier -run '^$$' -fuzz '^FuzzTranslate$$' -fuzztime $(FUZZTIME)
	$(GO) test ./sync/reconcile -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(FUZZTIME)
	$(GO) test ./cmd/ipvs-proxier -run '^$$' -fuzz '^FuzzConfig$$' -fuzztime $(FUZZTIME)

bench: bench-micro bench-kernel bench-scale bench-dataplane ## Every benchmark: Go microbenchmarks (fake kernel, then the real one in the VM), the scale run and the data-plane run against kube-proxy (long; not part of make test)

bench-micro: ## Go benchmarks (fake kernel, 30,000 Services x 4): one change, full syncs, retained heap of the syncer and of the informer caches, a /metrics scrape of 45,000 virtual servers; benchstat against bench/micro/baseline.txt
	@mkdir -p bench/micro
	$(GO) test ./sync/reconcile -run '^$$' -bench EndpointChange30k -benchtime 2000x -count 5 -benchmem | tee bench/micro/latest.txt
	$(GO) test ./sync/reconcile -run '^$$' -bench 'FullSync|RetainedHeap30k' -benchtime 2x -count 5 -benchmem | tee -a bench/micro/latest.txt
	$(GO) test ./sync/source -run '^$$' -bench RetainedObjects30k -benchtime 1x -count 5 | tee -a bench/micro/latest.txt
	$(GO) test ./sync/metrics -run '^$$' -bench VSCollect45k -benchtime 20x -count 5 -benchmem | tee -a bench/micro/latest.txt
	@if [ -f bench/micro/baseline.txt ]; then $(GO) run $(BENCHSTAT) bench/micro/baseline.txt bench/micro/latest.txt; \
	else echo "no bench/micro/baseline.txt: copy latest.txt there to start tracking"; fi

charts: ## Redraw bench/results' two charts from the CSVs that gather every proxy's runs (scale-all.csv, dataplane-all.csv); SCALE_RUN=DIR/results.csv or DATAPLANE_RUN=DIR/dataplane.csv first gathers a run's rows there (a newer run's rows of a step and proxy replace the older)
	@if [ -n "$(SCALE_RUN)" ]; then cd e2e && $(GO) run ./scalebench gather ../bench/results/scale-all.csv $(abspath $(SCALE_RUN)); fi
	@if [ -n "$(DATAPLANE_RUN)" ]; then cd e2e && $(GO) run ./dataplane gather ../bench/results/dataplane-all.csv $(abspath $(DATAPLANE_RUN)); fi
	cd e2e && $(GO) run ./scalebench chart ../bench/results/chart.png "1,000-30,000 Services × 4 endpoints, one proxy at a time (kube-proxy v1.37); qemu TCG VM, 2 vCPU, 2-core host" ../bench/results/scale-all.csv
	cd e2e && $(GO) run ./dataplane chart ../bench/results/dataplane.png "Requests through one Service beside 1,000 or 30,000 others, rows from several runs; qemu TCG VM, 2 vCPU, 2-core host" ../bench/results/dataplane-all.csv

bench-kernel: deps ## Real-kernel Go benchmarks in the VM: the IPVS dump, ours vs moby/ipvs, at IPVS_BENCH_VS virtual servers (default 60000); a cold start's set members through ipset and through nftables (the longest transaction); 30,000 address binds to one interface (a bind's cost grows with the addresses there)
	./e2e/vm/kernel-tests.sh bench

bench-scale: deps ## ipvs-proxier vs kube-proxy (BENCH_PROXIES: IPVS mode by default; "kube-proxy nftables", kube-router) in the VM at SVC_SCALE_STEPS Services (default 1000,5000,10000,30000); results in bench/results/
	cd e2e && $(GO) run ./scalebench

bench-dataplane: deps ## Requests and hairpin streams through a Service with DP_SIZES Services (default 1000,30000): ipvs-proxier vs kube-proxy's IPVS, iptables and nftables modes (and kube-router in DP_PROXIES) in the VM; results in bench/results/dataplane.md
	cd e2e && $(GO) run ./dataplane

soak: deps ## Hours on a VM node under churn and faults (SOAK_DURATION, default 2h; SOAK_SERVICES, default 5000 x 4) with traffic through untouched Services: a CSV a minute, a chart, verdicts (the kernel against plan, no growth, no failed request, every fault recovered); results in bench/results/soak/ (not part of make test)
	cd e2e && $(GO) run ./soak

e2e: deps ## End to end: real kube-apiserver + etcd, the daemon in VM nodes as deploy/ runs it, real traffic; the kubeadm upgrade advice (e2e/kubeadm); then the kubelet tier (e2e-kubelet)
	@mkdir -p bin
	@# The log is kept, and on failure its summary (e2e/failsummary.awk) is printed last.
	cd e2e && set -o pipefail && IPVS_PROXIER_E2E=1 $(GO) test -p 1 -count=1 -v -timeout 60m ./... 2>&1 | tee ../bin/e2e.log \
	  || { awk -f failsummary.awk ../bin/e2e.log; exit 1; }

# The Service behaviour tests of the e2e tier, which `make e2e-nftables` runs again with the
# nftables rules backend: each Service type, both traffic policies, source ranges, affinity,
# SCTP, dual-stack, deletion, drift repair, a restart and a switch of backend with zero failed
# requests.
E2E_NFT_TESTS = ^(TestClusterIP|TestNodePort|TestExternalIPs|TestLoadBalancerSourceRanges|TestInternalTrafficPolicyLocal|TestSessionAffinity|TestCrossNodeEndpoints|TestExternalTrafficPolicyLocalTwoNodes|TestDualStack|TestSCTPClusterIP|TestUDPEndpointReplacement|TestUDPScaleFromZero|TestHealthCheckNodePort|TestServiceDeletion|TestDriftRepairedWithinSyncPeriod|TestDaemonRestartNoFailures|TestSwitchRulesBackend|TestTakeoverFromKubeProxyToNftables)$$

e2e-nftables: deps ## The e2e tier's Service behaviour tests again, with the daemons on --rules-backend nftables (rulesBackend in deploy/'s config.conf)
	@mkdir -p bin
	cd e2e && set -o pipefail && IPVS_PROXIER_E2E=1 IPVS_PROXIER_E2E_RULES=nftables $(GO) test -count=1 -v -timeout 30m -run '$(E2E_NFT_TESTS)' . 2>&1 | tee ../bin/e2e-nftables.log \
	  || { awk -f failsummary.awk ../bin/e2e-nftables.log; exit 1; }

e2e-skew: deps ## The daemon against kube-apiserver v1.34, v1.35, v1.36 and v1.37 (each with the etcd its kubeadm deploys, built from e2e/skew/apiservers): first sync, a ClusterIP, a NodePort, an ETP=Local and a dual-stack Service answer (in make test-all)
	cd e2e && IPVS_PROXIER_E2E=1 IPVS_PROXIER_E2E_SKEW=1 $(GO) test -count=1 -v -timeout 90m ./skew

e2e-kubelet: deps ## Only the kubelet tier: the image under a real kubelet and containerd in the VM (apply, rolling update, outage, reboot, the migration guide)
	cd e2e && IPVS_PROXIER_E2E=1 $(GO) test -count=1 -v -timeout 60m ./kubelet

CONFORMANCE_PROXIES ?= ipvs-proxier,kube-proxy-ipvs
CONFORMANCE_PROCS ?= 3
# The cluster's shape: dual-stack (two nodes; the default), ipv4, ipv6-first, three-zones (dual-stack, three nodes).
CONFORMANCE_SHAPE ?= dual-stack
conformance: deps ## The upstream Kubernetes Service e2e suite on a cluster of CONFORMANCE_SHAPE (dual-stack by default, ipv4, ipv6-first, three-zones), with ipvs-proxier and with kube-proxy's IPVS mode (CONFORMANCE_PROXIES also: kube-proxy-nftables, kube-router, ipvs-proxier-nftables); writes docs/conformance[-SHAPE].md and .csv (long; not part of make test; CONFORMANCE_FOCUS narrows it)
	cd e2e && $(GO) run ./conformance/run -shape $(CONFORMANCE_SHAPE) -proxies $(CONFORMANCE_PROXIES) -procs $(CONFORMANCE_PROCS) $(if $(CONFORMANCE_FOCUS),-focus '$(CONFORMANCE_FOCUS)')

demo: deps ## The main job: local apiserver, a real-kernel VM node running the daemon, examples/demo.yaml; Ctrl-C to stop
	cd e2e && $(GO) run ./demo

demo-exec: ## Run CMD on a running demo's node: make demo-exec CMD='ipvsadm -Ln'
	@test -n "$$CMD" || { echo "usage: make demo-exec CMD='ipvsadm -Ln'"; exit 2; }
	@cd e2e && $(GO) run ./demo exec "$$CMD"

demo-down: ## Stop a running `make demo`
	@pid=$$(cat $${IPVS_PROXIER_CACHE:-$$HOME/.cache/ipvs-proxier}/demo.pid 2>/dev/null) && kill $$pid && echo "stopped demo (pid $$pid)" || echo "no demo running"

IMAGE_ARCHIVE ?= bin/ipvs-proxier-image.tar
image-oci: deps ## Build the image without a container engine (mmdebstrap + go-containerregistry) into IMAGE_ARCHIVE, reproducibly (SOURCE_DATE_EPOCH)
	@mkdir -p $(dir $(IMAGE_ARCHIVE))
	cd e2e/image && $(GO) run . -out $(abspath $(IMAGE_ARCHIVE)) -tag $(IMAGE)

test-image: deps ## Build the image twice (same digest), check its contents and run its binary and iptables wrapper in a fresh netns
	cd e2e/image && IPVS_PROXIER_E2E=1 $(GO) test -count=1 -v .

image: ## Build the container image with docker or podman (no engine runs in CI; a test checks the Dockerfile instead)
	@engine=$$(command -v docker || command -v podman) || { echo "make image: needs docker or podman"; exit 1; }; \
	$$engine build --build-arg VERSION=$(RELEASE) -t $(IMAGE) .

plan-example: build ## Print what the daemon would program for examples/cluster.yaml
	$(BIN) plan -f examples/cluster.yaml --hostname-override test-node --cluster-cidr 10.244.0.0/16

.PHONY: help build test test-all deps charts prebuild test-unit test-netns test-vm e2e e2e-nftables e2e-skew e2e-kubelet lint fuzz bench bench-micro bench-kernel bench-scale bench-dataplane conformance demo demo-exec demo-down image image-oci test-image plan-example

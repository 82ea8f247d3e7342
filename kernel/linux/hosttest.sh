#!/usr/bin/env bash
# Runs the real-kernel tests of kernel/linux that this host's kernel supports (ipset,
# conntrack, addresses on veth, iptables) inside a fresh network namespace, so nothing of
# the machine's own networking is touched. The host tools come from e2e/hostdeps.
set -euo pipefail
cd "$(dirname "$0")"
if [ "$(id -u)" != 0 ]; then echo "hosttest.sh: needs root (unshare -n)"; exit 1; fi
../../e2e/hostdeps/install.sh
bin=$(mktemp -d)/linux.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" .
echo "hosttest.sh: running kernel/linux tests in a fresh netns"
IPVS_PROXIER_TEST_NETNS=1 unshare -n sh -c "ip link set lo up && '$bin' -test.v -test.run 'Real$'" | grep -E '^(=== RUN|--- |PASS|FAIL|ok|\s+\S+_test.go)'

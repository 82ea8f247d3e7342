#!/usr/bin/env bash
# Builds the kernel/linux and sync/reconcile tests and runs them in the VM: the IPVS and dummy
# backend tests, the netns tests again on a second kernel, and the syncer on the real
# kernel with real packets.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
payload=$(mktemp -d)
trap 'rm -rf "$payload"' EXIT
(cd "$here/../.." && CGO_ENABLED=0 go test -c -o "$payload/linux.test" ./kernel/linux &&
  CGO_ENABLED=0 go test -c -o "$payload/reconcile.test" ./sync/reconcile &&
  mkdir -p "$payload/testdata" && cp -r sync/reconcile/testdata/scenarios "$payload/testdata/")
(cd "$here/.." && CGO_ENABLED=0 go build -o "$payload/agent" ./agent)
if [ "${1:-}" = bench ]; then
  cat > "$payload/scenario.sh" <<SCEN
export IPVS_PROXIER_TEST_IPVS=1 IPVS_BENCH_VS=${IPVS_BENCH_VS:-60000}
/linux.test -test.run '^\$' -test.bench 'IPVSDump/(ipvs-proxier|moby-ipvs|lookup-all|lookup-tenth)\$' -test.benchtime 5x 2>&1
IPVS_BENCH_VS=1000 /linux.test -test.run '^\$' -test.bench 'IPVSDump/real-servers' -test.benchtime 3000x 2>&1
IPVS_PROXIER_TEST_NETNS=1 /linux.test -test.run '^\$' -test.bench 'SetWrites' -test.benchtime 3x 2>&1
IPVS_PROXIER_TEST_NETNS=1 /linux.test -test.run '^\$' -test.bench 'AddressBinds' -test.benchtime 1x 2>&1
SCEN
  "$here/vm.sh" run "$payload"
  exit
fi
# The backend tests that need only a network namespace ran on this host already
# (`make test-netns`); `make test-all` (IPVS_PROXIER_TEST_ALL=1) runs them again on the
# VM's kernel, `make test` only those that need its IPVS and dummy modules.
again=0
[ "${IPVS_PROXIER_TEST_ALL:-}" = 1 ] && again=1
echo "linux_netns_again=$again" > "$payload/env.sh"
cat > "$payload/scenario.sh" <<'SCEN'
export IPVS_PROXIER_TEST_NETNS=1 IPVS_PROXIER_TEST_IPVS=1
. /env.sh
rc=0
IPVS_PROXIER_TEST_NETNS=$linux_netns_again /linux.test -test.v 2>&1 || rc=1
/reconcile.test -test.v -test.run 'TestRealPackets|TestFullSyncLookupsRealKernel|TestFullSyncWatchedAddressesRealKernel|TestAddressBatchRealKernel' 2>&1 || rc=1
# The scenario scripts read testdata/scenarios from the working directory.
cd / && /reconcile.test -test.v -test.run 'TestScenariosRealKernel' 2>&1 || rc=1
exit $rc
SCEN
rc=0
"$here/vm.sh" run "$payload" || rc=1
# The nftables rules backend on a node that has no ipset, no xtables modules and no
# iptables binary (vm.sh strips them for a payload with no-xtables): the syncer's real
# packets and the scenario scripts again, and /proc/modules must show none of them.
rm -f "$payload/scenario.sh"
: > "$payload/no-xtables"
cat > "$payload/scenario.sh" <<'SCEN'
export IPVS_PROXIER_TEST_NETNS=1 IPVS_PROXIER_TEST_IPVS=1 IPVS_PROXIER_TEST_RULES=nftables IPVS_PROXIER_TEST_NO_XTABLES=1
rc=0
/linux.test -test.v -test.run 'Nftables' 2>&1 || rc=1
/reconcile.test -test.v -test.run 'TestRealPackets' 2>&1 || rc=1
cd / && /reconcile.test -test.v -test.run 'TestScenariosRealKernel' 2>&1 || rc=1
exit $rc
SCEN
"$here/vm.sh" run "$payload" || rc=1
exit $rc

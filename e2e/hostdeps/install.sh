#!/usr/bin/env bash
# Installs the Debian packages on the "install" lines of packages.txt beside this script:
# every host package that the tests, the harness, the demo and the benchmarks need, and
# the only place in the repository that installs one. Idempotent, and silent when every
# package is there already. `make deps` runs it; so does every tier, first.
set -euo pipefail
list=$(dirname "$0")/packages.txt
mapfile -t want < <(awk '$1 == "install" { print $2 }' "$list")

missing() {
  # dpkg-query prints nothing for a package it has never seen, and then exits 1: those
  # count as missing.
  local have
  have=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${want[@]}" 2>/dev/null || true)
  have=$(awk '$2 == "ii" { print $1 }' <<<"$have")
  for p in "${want[@]}"; do grep -qxF "$p" <<<"$have" || echo "$p"; done
}

mapfile -t need < <(missing)
((${#need[@]})) || exit 0
if [ "$(id -u)" != 0 ]; then
  echo "hostdeps: missing ${need[*]}: run as root, or apt-get install ${need[*]}" >&2
  exit 1
fi
# One install at a time: tiers and the harness may call this together.
exec 9>"${TMPDIR:-/tmp}/ipvs-proxier-hostdeps.lock"
flock 9
mapfile -t need < <(missing)
((${#need[@]})) || exit 0
echo "hostdeps: installing ${need[*]} (first run only)" >&2
export DEBIAN_FRONTEND=noninteractive
apt=(apt-get -o DPkg::Lock::Timeout=300 -y -qq --no-install-recommends)
# A new machine has no package lists yet, and old lists may name versions gone from the
# mirror: update once and retry when the first try fails.
if ! "${apt[@]}" install "${need[@]}" >/dev/null 2>&1; then
  apt-get -o DPkg::Lock::Timeout=300 update -qq
  "${apt[@]}" install "${need[@]}" >/dev/null
fi

#!/usr/bin/env bash
# Real-kernel test VM: a Debian kernel (IPVS, dummy, ipset as modules) under qemu TCG,
# with a busybox initramfs. The host kernel has no IPVS, so every IPVS claim is tested here.
#
#   vm.sh deps              install the host packages (e2e/hostdeps) and fetch the kernel into the cache
#   vm.sh run PAYLOAD [MB]  boot with PAYLOAD/ copied to / (it must hold /scenario.sh);
#                           prints the console and exits with the scenario's status
#   vm.sh initrd OUT PAYLOAD  build the initramfs only (the e2e harness boots it itself)
#   vm.sh disk OUT PAYLOAD MB  build an ext4 root disk OUT (the same tree, plus containerd,
#                           runc and the CNI plugins from Debian and the modules a kubelet node needs) and
#                           OUT.initrd, a small initramfs that mounts it and switches to it
#   vm.sh kernel            print the kernel image path
#
# Cache: $IPVS_PROXIER_CACHE (default ~/.cache/ipvs-proxier/vm), outside the repo.
set -euo pipefail
CACHE=${IPVS_PROXIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ipvs-proxier}/vm
mkdir -p "$CACHE"
say() { echo "vm.sh: $*" >&2; }

deps() {
  "$(dirname "$0")/../hostdeps/install.sh"
  if [ ! -f "$CACHE/kver" ]; then
    local pkg; pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
    if [ -z "$pkg" ]; then # a fresh machine has no package lists yet
      apt-get update -qq
      pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/{print $2; exit}')
    fi
    say "fetching kernel package $pkg (first run only)"
    (cd "$CACHE" && rm -rf kroot ./*.deb && apt-get download "$pkg" >/dev/null 2>&1 && dpkg -x "$pkg"_*.deb kroot && rm -f ./*.deb)
    local kver; kver=$(ls "$CACHE/kroot/lib/modules")
    depmod -b "$CACHE/kroot" "$kver"
    echo "$kver" > "$CACHE/kver"
  fi
}

# copy_bin ROOT BIN: a dynamically linked binary with its libraries and loader.
copy_bin() {
  local root=$1 bin=$2
  mkdir -p "$root$(dirname "$bin")"
  cp -L "$bin" "$root$bin"
  ldd "$bin" 2>/dev/null | awk '/=>/{print $3} /^[ \t]*\/lib64/{print $1}' | while read -r lib; do
    [ -n "$lib" ] || continue
    mkdir -p "$root$(dirname "$lib")"; cp -Ln "$lib" "$root$lib" 2>/dev/null || true
  done
}

# tree ROOT PAYLOAD: the node's root filesystem (busybox, the kernel modules, the
# networking tools, PAYLOAD and /init) in ROOT.
tree() {
  local root=$1 payload=$2 kver m
  kver=$(cat "$CACHE/kver")
  mkdir -p "$root"/{bin,sbin,usr/sbin,usr/bin,proc,sys,dev,tmp,run,etc,lib/modules,var/run,run/netns}
  cp /usr/bin/busybox "$root/bin/"
  for l in $(busybox --list); do [ -e "$root/bin/$l" ] || ln -s busybox "$root/bin/$l"; done
  m="$CACHE/kroot/lib/modules/$kver"
  mkdir -p "$root/lib/modules/$kver"
  cp "$m"/modules.* "$root/lib/modules/$kver/"
  (cd "$m" && find kernel/net kernel/lib kernel/crypto kernel/drivers/net/dummy.ko* kernel/drivers/net/veth.ko* \
      kernel/drivers/net/ethernet/intel/e1000 -name '*.ko*' | cpio -pdm "$root/lib/modules/$kver" 2>/dev/null)
  # nft: kube-proxy's nftables mode runs it (the data-plane benchmark).
  for b in /usr/sbin/ipvsadm /usr/sbin/ipset /usr/sbin/conntrack /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /usr/sbin/ip /usr/bin/ip /usr/sbin/nft; do
    [ -e "$b" ] && copy_bin "$root" "$b"
  done
  for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -sf xtables-nft-multi "$root/usr/sbin/$t"; ln -sf xtables-nft-multi "$root/usr/sbin/${t/tables/tables-nft}"
    ln -sf xtables-legacy-multi "$root/usr/sbin/${t/tables/tables-legacy}"
  done
  mkdir -p "$root/usr/lib/x86_64-linux-gnu"
  cp -a /usr/lib/x86_64-linux-gnu/xtables "$root/usr/lib/x86_64-linux-gnu/"
  for lib in /usr/lib/x86_64-linux-gnu/xtables/*.so; do
    ldd "$lib" | awk '/=>/{print $3}' | while read -r l; do mkdir -p "$root$(dirname "$l")"; cp -Ln "$l" "$root$l" 2>/dev/null || true; done
  done
  if [ -e "$payload/no-xtables" ]; then
    # A node as nftables-only distributions make it: no ipset, no xtables (matches,
    # iptables tables, nft_compat) in the module tree, and no iptables or ipset binary.
    find "$root/lib/modules" \( -name 'ip_set*' -o -name 'x_tables.ko*' -o -name 'xt_*' -o -name 'ip_tables.ko*' \
      -o -name 'ip6_tables.ko*' -o -name 'iptable_*' -o -name 'ip6table_*' -o -name 'ipt_*' -o -name 'ip6t_*' \
      -o -name 'nft_compat.ko*' -o -name 'ebtable*' -o -name 'arp_tables.ko*' -o -name 'arptable_*' \) -delete
    depmod -b "$root" "$kver"
    rm -f "$root"/usr/sbin/{ipset,xtables-nft-multi,xtables-legacy-multi} "$root"/usr/sbin/ip{,6}tables*
  fi
  cp /etc/protocols /etc/services "$root/etc/"
  [ -f /etc/ethertypes ] && cp /etc/ethertypes "$root/etc/"
  ln -sf /proc/self/mounts "$root/etc/mtab"
  echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"
  echo "127.0.0.1 localhost" > "$root/etc/hosts"
  cp -a "$payload"/. "$root/"
  cat > "$root/init" <<'INIT'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
# busybox modprobe ignores softdeps: crc32c_generic before ip_vs (libcrc32c needs it).
for mod in crc32c_generic e1000 dummy veth ip_vs ip_vs_rr ip_vs_wrr ip_vs_lc ip_vs_wlc ip_vs_lblc ip_vs_lblcr ip_vs_dh \
  ip_vs_sh ip_vs_sed ip_vs_nq ip_vs_mh nf_conntrack nf_conntrack_netlink ip_set ip_set_hash_ip ip_set_hash_ipport \
  ip_set_hash_ipportip ip_set_hash_ipportnet ip_set_hash_net ip_set_bitmap_port xt_set nf_tables nft_compat \
  nft_chain_nat nf_nat xt_MASQUERADE xt_mark xt_comment xt_addrtype xt_conntrack xt_nat xt_multiport ip_tables \
  iptable_nat iptable_filter br_netfilter nf_reject_ipv4 xt_REJECT xt_physdev xt_ipvs ip6_tables ip6table_nat \
  ip6table_filter iptable_mangle ip6table_mangle nf_reject_ipv6 ip6t_REJECT ipt_REJECT nft_reject nft_reject_inet sctp \
  xt_statistic xt_recent xt_tcpudp nft_ct nft_numgen nft_nat nft_masq nft_fib nft_fib_ipv4 nft_fib_inet nft_reject_ipv4 \
  nft_limit nft_objref nft_hash; do
  modprobe $mod 2>/dev/null
done
ip link set lo up
echo "=== VM-READY kernel $(uname -r)"
sh /scenario.sh
echo "=== VM-DONE rc=$?"
poweroff -f
INIT
  chmod +x "$root/init"
}

initrd() {
  local out=$1 payload=$2 root
  root=$(mktemp -d)
  tree "$root" "$payload"
  (cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1 > "$out")
  rm -rf "$root"
}

# node_pkgs: containerd, runc, libseccomp and the CNI plugins (bridge, host-local,
# loopback, portmap: the conformance cluster's pod network) from Debian, unpacked once
# into the cache.
NODE_PKGS="containerd runc libseccomp2 containernetworking-plugins"
node_pkgs() {
  [ -x "$CACHE/pkgs/usr/bin/containerd" ] && [ -x "$CACHE/pkgs/usr/lib/cni/bridge" ] && return
  say "fetching $NODE_PKGS from Debian (first run only)"
  local tmp; tmp=$(mktemp -d)
  # shellcheck disable=SC2086
  (cd "$tmp" && apt-get download $NODE_PKGS >/dev/null 2>&1) || { apt-get update -qq; (cd "$tmp" && apt-get download $NODE_PKGS >/dev/null); }
  rm -rf "$CACHE/pkgs.tmp"
  for d in "$tmp"/*.deb; do dpkg -x "$d" "$CACHE/pkgs.tmp"; done
  rm -rf "$tmp" "$CACHE/pkgs"; mv "$CACHE/pkgs.tmp" "$CACHE/pkgs"
}

# disk OUT PAYLOAD MB: a kubelet node's ext4 root disk and the initramfs that boots it.
# The kubelet cannot run on an initramfs root ("cannot find filesystem info for device
# rootfs"), and pivot_root, which runc uses, needs a real root mount.
disk() {
  local out=$1 payload=$2 mb=$3 kver root boot m
  kver=$(cat "$CACHE/kver"); m="$CACHE/kroot/lib/modules/$kver"
  node_pkgs
  root=$(mktemp -d)
  tree "$root" "$payload"
  (cd "$m" && find kernel/fs/overlayfs kernel/fs/ext4 kernel/fs/jbd2 kernel/fs/mbcache.ko kernel/drivers/virtio \
      kernel/drivers/block/virtio_blk.ko -name '*.ko*' | cpio -pdm "$root/lib/modules/$kver" 2>/dev/null)
  for b in /usr/bin/containerd /usr/bin/containerd-shim-runc-v2 /usr/bin/ctr /usr/sbin/runc \
      /usr/lib/cni/bridge /usr/lib/cni/host-local /usr/lib/cni/loopback /usr/lib/cni/portmap; do
    mkdir -p "$root$(dirname "$b")"; cp -L "$CACHE/pkgs$b" "$root$b"
  done
  cp -L "$CACHE"/pkgs/usr/lib/x86_64-linux-gnu/libseccomp.so.2* "$root/usr/lib/x86_64-linux-gnu/"
  for l in /lib/x86_64-linux-gnu/libc.so.6 /lib64/ld-linux-x86-64.so.2; do mkdir -p "$root$(dirname "$l")"; cp -Ln "$l" "$root$l" 2>/dev/null || true; done
  rm -f "$out"; truncate -s "${mb}M" "$out"
  mkfs.ext4 -q -F -L root -d "$root" "$out"
  rm -rf "$root"
  # The boot initramfs: busybox and the modules that reach the disk, nothing else.
  boot=$(mktemp -d)
  mkdir -p "$boot"/{bin,proc,sys,dev,newroot,lib/modules/$kver}
  cp /usr/bin/busybox "$boot/bin/"
  for l in sh mount umount modprobe switch_root sleep mkdir; do ln -s busybox "$boot/bin/$l"; done
  cp "$m"/modules.* "$boot/lib/modules/$kver/"
  (cd "$m" && find kernel/fs/ext4 kernel/fs/jbd2 kernel/fs/mbcache.ko kernel/lib/crc16.ko kernel/crypto/crc32c_generic.ko \
      kernel/lib/libcrc32c.ko kernel/drivers/virtio kernel/drivers/block/virtio_blk.ko -name '*.ko*' 2>/dev/null | cpio -pdm "$boot/lib/modules/$kver" 2>/dev/null)
  cat > "$boot/init" <<'INIT'
#!/bin/sh
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for mod in crc32c_generic crc16 virtio_pci virtio_blk ext4; do modprobe $mod; done
for i in $(seq 1 100); do [ -b /dev/vda ] && break; sleep 0.1; done
mount -t ext4 /dev/vda /newroot || { echo "=== VM-BOOT no root disk"; sleep 5; exit 1; }
umount /proc /sys /dev
exec switch_root /newroot /init
INIT
  chmod +x "$boot/init"
  (cd "$boot" && find . | cpio -o -H newc 2>/dev/null | gzip -1 > "$out.initrd")
  rm -rf "$boot"
}

run() {
  local payload=$1 mem=${2:-1536} kver log img rc
  deps
  kver=$(cat "$CACHE/kver")
  img=$(mktemp --suffix .cpio.gz); log=$(mktemp --suffix .log)
  say "building initramfs"
  initrd "$img" "$payload"
  say "booting $kver under qemu TCG (no KVM here)"
  timeout "${VM_TIMEOUT:-1200}" qemu-system-x86_64 -accel tcg -m "$mem" -smp 2 \
    -kernel "$CACHE/kroot/boot/vmlinuz-$kver" -initrd "$img" \
    -append "console=ttyS0 quiet panic=-1" \
    -netdev user,id=n0,restrict=on -device e1000,netdev=n0 \
    -display none -serial "file:$log" -monitor none -no-reboot || say "qemu exited with $?"
  sed -n '/=== VM-READY/,$p' "$log" | tr -d '\r'
  rc=$(sed -n 's/.*=== VM-DONE rc=\([0-9]*\).*/\1/p' "$log" | tail -1)
  rm -f "$img" "$log"
  [ -n "$rc" ] || { say "the VM did not finish"; return 1; }
  return "$rc"
}

cmd=${1:-}; shift || true
case "$cmd" in
  deps) deps ;;
  run) run "$@" ;;
  initrd) deps; initrd "$@" ;;
  disk) deps; disk "$@" ;;
  kernel) deps >&2; echo "$CACHE/kroot/boot/vmlinuz-$(cat "$CACHE/kver")" ;;
  *) echo "usage: vm.sh deps | run PAYLOAD [MB] | initrd OUT PAYLOAD | disk OUT PAYLOAD MB | kernel" >&2; exit 2 ;;
esac

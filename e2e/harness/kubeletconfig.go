package harness

import "strings"

// The kubelet node's configuration files.

// kubeletConfig: cgroupfs (the VM has no systemd), cgroup v2 (the kubelet refuses v1 by
// default since v1.35), no swap check, no webhook authn/authz (the apiserver never
// calls the kubelet here), eviction thresholds a 4 GiB test disk does not cross.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
resolvConf: /etc/kubelet/resolv.conf
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
serializeImagePulls: false
localStorageCapacityIsolation: false
`

// upstreamResolvConf is the resolv.conf the kubelet gives pods with dnsPolicy Default
// (the cluster DNS server among them, which forwards what it does not serve there): qemu's
// DNS address, not the node's own 127.0.0.1, which inside a pod's network namespace
// would be the pod itself (CoreDNS's loop plugin stops the server on such a loop).
const upstreamResolvConf = "nameserver 10.0.2.3\n"

// kubeletConfigFor is kubeletConfig as the options shape it: with the cluster DNS
// server, when there is one, and local storage accounting, when asked for.
func kubeletConfigFor(opts KubeletNodeOptions) string {
	c := kubeletConfig
	if opts.LocalStorageIsolation {
		c = strings.Replace(c, "localStorageCapacityIsolation: false\n", "", 1)
	}
	if opts.ClusterDNS != "" {
		c += "clusterDNS: [" + opts.ClusterDNS + "]\nclusterDomain: cluster.local\n"
	}
	return c
}

// containerdConfig: containerd 1.6 (Debian bookworm's; kubelet v1.37 is the last that
// runs on it), the CRI plugin with our pause image and runc from Debian. The CNI
// plugins are Debian's, where its package puts them; the kubelet tier writes no CNI
// config (its pods are hostNetwork, the Node stays NotReady, and the DaemonSet tolerates
// it), the conformance cluster writes one per node from its podCIDR.
const containerdConfig = `version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "` + PauseImage + `"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
`

// kubeletScenario is the node's boot script after /init: network, cgroup2, containerd
// (importing the images once: the marker stays on the disk), then the kubelet.
func kubeletScenario(name, nodeIP string, link *Link) string {
	return `/usr/sbin/ip link set eth0 up
/usr/sbin/ip addr add ` + NodeIP + `/24 dev eth0
/usr/sbin/ip route add default via 10.0.2.2
` + link.setup() + `echo 1 > /proc/sys/net/ipv4/ip_forward
hostname ` + name + `
mount -t tmpfs run /run && mkdir -p /run/netns && mount --bind /run /var/run
mount -t cgroup2 none /sys/fs/cgroup
echo "+cpu +cpuset +memory +pids +io" > /sys/fs/cgroup/cgroup.subtree_control
modprobe overlay
mkdir -p /var/log
/agent > /tmp/agent.log 2>&1 &
/usr/bin/containerd --config /etc/containerd/config.toml >> /var/log/containerd.log 2>&1 &
for i in $(seq 1 120); do [ -S /run/containerd/containerd.sock ] && break; sleep 0.5; done
if [ ! -f /var/lib/e2e-images-imported ]; then
  for f in $(cat /usr/local/bin/kubelet-images); do
    /usr/bin/ctr -n k8s.io images import /images/$f >> /var/log/import.log 2>&1 && rm -f /images/$f
  done
  touch /var/lib/e2e-images-imported
fi
echo "=== boot $(date +%s)" >> /var/log/kubelet.log
/usr/local/bin/kubelet --config=/var/lib/kubelet/config.yaml --kubeconfig=/etc/kubernetes/kubelet.conf \
  --hostname-override=` + name + ` --node-ip=` + nodeIP + ` --v=2 >> /var/log/kubelet.log 2>&1 &
while true; do sleep 3600; done
`
}

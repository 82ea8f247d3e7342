package harness

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The kubelet tier: a node VM that boots an ext4 disk with containerd and runc from
// Debian and the kubelet built from the pinned module, as a user's node runs, so the
// daemon runs from its image under a real kubelet instead of as a process.

// PauseImage is the pod sandbox image the node's containerd uses (sandbox_image),
// built by e2e/image -pause and imported with the others.
const PauseImage = "localhost/ipvs-proxier-e2e/pause:1"

// KubeProxyImage is stock kube-proxy's image as kubeadm's DaemonSet names it, built
// by e2e/image -kube-proxy on our image's Debian base.
const KubeProxyImage = "registry.k8s.io/kube-proxy:" + KubeVersion

// KubeletNode is a node VM running containerd and a kubelet, with the agent beside them.
type KubeletNode struct {
	*Node
	args []string
	// KubeletPort is the host loopback port that reaches the node's kubelet (10250), for
	// the apiserver's exec, logs and port-forward (see KubeletProxy).
	KubeletPort int
}

// KubeletNodeOptions shape a kubelet node VM.
type KubeletNodeOptions struct {
	// Link joins the node to the others' pod network; the kubelet's --node-ip is then
	// the link address, as on a cluster whose nodes share a LAN.
	Link *Link
	// MemoryMB is the VM's memory; 2048 when 0.
	MemoryMB int
	// ClusterDNS is the kubelet's clusterDNS (the kube-dns Service's ClusterIP), with
	// clusterDomain cluster.local; pods then resolve Service names. Empty: no cluster DNS.
	ClusterDNS string
	// LocalStorageIsolation turns the kubelet's local (ephemeral) storage accounting on,
	// as kubelets run by default: pods over their ephemeral-storage limit are evicted.
	LocalStorageIsolation bool
	// NodeIPs is the kubelet's --node-ip (both families, the primary first, on a
	// dual-stack node); the node's one IP when empty.
	NodeIPs string
}

// BuildImages writes the docker archives the kubelet node imports into dir: ours
// (make image-oci's build), the pause image and kube-proxy's.
func BuildImages(dir string, bins Binaries) ([]string, error) {
	var out []string
	Logf("building the images (e2e/image: ours, pause, kube-proxy)")
	for _, im := range []struct{ file, tag, extra string }{
		{"ipvs-proxier.tar", "", ""},
		{"pause.tar", PauseImage, "-pause"},
		{"kube-proxy.tar", KubeProxyImage, "-kube-proxy=" + bins.KubeProxy},
	} {
		f := filepath.Join(dir, im.file)
		args := []string{"run", ".", "-out", f}
		if im.tag != "" {
			args = append(args, "-tag", im.tag)
		}
		if im.extra != "" {
			args = append(args, im.extra)
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join(E2EDir(), "image")
		if o, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("image %s: %w\n%s", im.file, err, o)
		}
		out = append(out, f)
	}
	return out, nil
}

// StartKubeletNode builds a root disk holding the kubelet, containerd, the agent and the
// image archives (imported into containerd at the first boot, kept on the disk after),
// and boots it. The node registers itself; its kubelet uses the admin credentials.
func (cp *ControlPlane) StartKubeletNode(name string, kb KubeletBinaries, images []string) (*KubeletNode, error) {
	return cp.StartKubeletNodeWith(name, kb, images, KubeletNodeOptions{})
}

// StartKubeletNodeWith is StartKubeletNode with options.
func (cp *ControlPlane) StartKubeletNodeWith(name string, kb KubeletBinaries, images []string, opts KubeletNodeOptions) (*KubeletNode, error) {
	n := &Node{Name: name, IP: NodeIP, dir: filepath.Join(cp.Dir, "node-"+name), Forwarded: map[int]int{}}
	if opts.Link != nil {
		n.IP = opts.Link.IP
	}
	payload := filepath.Join(n.dir, "payload")
	agent := exec.Command("go", "build", "-o", filepath.Join(payload, "agent"), "./agent")
	agent.Dir, agent.Env = E2EDir(), append(os.Environ(), "CGO_ENABLED=0")
	if o, err := agent.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build agent: %w\n%s", err, o)
	}
	ca, err := os.ReadFile(cp.CACert)
	if err != nil {
		return nil, err
	}
	files := map[string]string{
		"etc/kubernetes/ca.crt":        string(ca),
		"etc/kubernetes/kubelet.conf":  kubeconfigFor(ControlPlaneEndpoint, "/etc/kubernetes/ca.crt", adminToken),
		"var/lib/kubelet/config.yaml":  kubeletConfigFor(opts),
		"etc/kubelet/resolv.conf":      upstreamResolvConf,
		"etc/containerd/config.toml":   containerdConfig,
		"etc/resolv.conf":              "nameserver 127.0.0.1\n",
		"etc/hostname":                 name + "\n",
		"etc/machine-id":               fmt.Sprintf("%032x\n", time.Now().UnixNano()),
		"scenario.sh":                  kubeletScenario(name, cmp.Or(opts.NodeIPs, n.IP), opts.Link),
		"usr/local/bin/kubelet-images": strings.Join(baseNames(images), "\n") + "\n",
	}
	for p, c := range files {
		if err := writeFile(filepath.Join(payload, p), []byte(c)); err != nil {
			return nil, err
		}
	}
	for src, dst := range map[string]string{kb.Kubelet: "usr/local/bin/kubelet"} {
		if err := copyFile(src, filepath.Join(payload, dst)); err != nil {
			return nil, err
		}
	}
	for _, im := range images {
		if err := copyFile(im, filepath.Join(payload, "images", filepath.Base(im))); err != nil {
			return nil, err
		}
	}
	disk := filepath.Join(n.dir, "disk.img")
	Logf("building node %s's root disk", name)
	if o, err := exec.Command(filepath.Join(RepoRoot(), "e2e/vm/vm.sh"), "disk", disk, payload, "4096").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("disk: %w\n%s", err, o)
	}
	_ = os.RemoveAll(payload)
	kernel, err := exec.Command(filepath.Join(RepoRoot(), "e2e/vm/vm.sh"), "kernel").Output()
	if err != nil {
		return nil, fmt.Errorf("kernel: %w", err)
	}
	if n.agentPort, err = FreePort(); err != nil {
		return nil, err
	}
	kubeletPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	n.Console = filepath.Join(n.dir, "console.log")
	netdev := fmt.Sprintf("user,id=n0,restrict=on,net=10.0.2.0/24,guestfwd=tcp:%s:6443-cmd:socat - TCP:127.0.0.1:%d,hostfwd=tcp:127.0.0.1:%d-:7000,hostfwd=tcp:127.0.0.1:%d-:10250",
		APIServerGuestIP, cp.Port, n.agentPort, kubeletPort)
	mem := "2048"
	if opts.MemoryMB > 0 {
		mem = fmt.Sprint(opts.MemoryMB)
	}
	// One vCPU: with two, one boot in five hung right after the kubelet started (both
	// vCPUs in soft lockup in kubelet threads, under a loaded host), the way a lost
	// cross-CPU interrupt under TCG looks; a single vCPU has no peer to wait for.
	kn := &KubeletNode{Node: n, KubeletPort: kubeletPort, args: []string{"-accel", "tcg", "-m", mem, "-smp", "1",
		"-kernel", strings.TrimSpace(string(kernel)), "-initrd", disk + ".initrd", "-append", "console=ttyS0 quiet panic=-1",
		"-drive", "file=" + disk + ",if=virtio,format=raw", "-netdev", netdev, "-device", "e1000,netdev=n0",
		"-display", "none", "-serial", "file:" + n.Console, "-monitor", "none", "-no-reboot"}}
	if link := opts.Link; link != nil {
		kn.args = append(kn.args, link.qemuArgs()...)
	}
	return kn, kn.Boot()
}

// Boot powers the node on (again, after Stop: a reboot keeps only the disk) and waits
// for its agent.
func (kn *KubeletNode) Boot() error {
	kn.cmd = tiedToUs(exec.Command("qemu-system-x86_64", kn.args...))
	Logf("booting kubelet node %s (qemu TCG)", kn.Name)
	if err := kn.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(4 * time.Minute)
	for {
		if _, code, err := kn.Exec("true"); err == nil && code == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			kn.Stop()
			return fmt.Errorf("node %s: agent not up; console %s, its end:\n%s", kn.Name, kn.Console, tail(kn.Console, 30))
		}
		time.Sleep(time.Second)
	}
}

// PowerOff flushes the disk and cuts the power, as a node crash or a hard reboot does:
// the kernel state (IPVS, sets, addresses, routes) is gone at the next boot.
func (kn *KubeletNode) PowerOff() {
	_, _, _ = kn.Exec("sync")
	kn.Stop()
}

func kubeconfigFor(server, caFile, token string) string {
	return "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"" + server + "\", certificate-authority: " + caFile +
		"}\nusers:\n- name: u\n  user: {token: " + token + "}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o755)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return writeFile(dst, b)
}

package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// APIServerGuestIP is where VMs reach the apiserver (a qemu guestfwd to loopback).
const APIServerGuestIP = "10.0.2.100"

const adminToken = "e2e-admin-token"

// KubernetesServiceIP is the `kubernetes` Service's ClusterIP (the first address of the
// service range), what the kubelet puts in every pod's KUBERNETES_SERVICE_HOST.
const KubernetesServiceIP = "10.96.0.1"

// StockKubeProxyDir holds stock kube-proxy's config and kubeconfig in a VM (no leading
// slash), apart from the DaemonSet's /var/lib/kube-proxy.
const StockKubeProxyDir = "var/lib/stock-kube-proxy"

// ControlPlane is etcd plus kube-apiserver on loopback.
type ControlPlane struct {
	Dir  string
	Port int
	// EtcdURL is etcd's client URL (the benchmarks' loader writes objects there).
	EtcdURL string
	CACert  string
	saKey   string
	Admin   *kubernetes.Clientset
	RESTCfg *rest.Config
	Bins    Binaries
	procs   []*exec.Cmd
	// apiserver restarts the apiserver with the same flags (outage tests).
	apiserver func() error
	apiProc   int
}

// StartControlPlane builds etcd and kube-apiserver (BuildControlPlane: cached after the
// first run), starts them on 127.0.0.1 and waits until ready. extraArgs are appended to
// kube-apiserver's (the scale benchmark widens the NodePort range).
func StartControlPlane(extraArgs ...string) (*ControlPlane, error) {
	bins, err := BuildControlPlane()
	if err != nil {
		return nil, err
	}
	return StartControlPlaneWith(bins, extraArgs...)
}

// StartControlPlaneWith starts bins' etcd and kube-apiserver (another version's, for
// the skew tests: BuildAPIServerAt) as StartControlPlane does.
func StartControlPlaneWith(bins Binaries, extraArgs ...string) (*ControlPlane, error) {
	dir, err := os.MkdirTemp("", "ipvs-proxier-e2e-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir, Bins: bins}
	cert, key, saKey, err := writePKI(dir)
	if err != nil {
		return nil, err
	}
	cp.CACert, cp.saKey = cert, saKey
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	etcdURL, peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cp.EtcdURL = etcdURL
	cp.Port = ports[2]
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(adminToken+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, err
	}
	Logf("starting etcd and kube-apiserver on 127.0.0.1:%d", cp.Port)
	// etcd's data is throw-away: no fsync.
	if err := cp.start(filepath.Join(dir, "etcd.log"), bins.Etcd, "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL, "--unsafe-no-fsync"); err != nil {
		return nil, err
	}
	// --endpoint-reconciler-type=none: a loopback apiserver cannot publish itself.
	apiArgs := []string{
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(cp.Port),
		"--tls-cert-file", cert, "--tls-private-key-file", key,
		"--service-cluster-ip-range", "10.96.0.0/16,fd00:96::/112", "--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "RBAC", "--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
		"--endpoint-reconciler-type", "none", "--advertise-address", APIServerGuestIP,
		"--allow-privileged=true"} // as every cluster running kube-proxy does
	apiArgs = append(apiArgs, extraArgs...)
	cp.apiserver = func() error {
		cp.apiProc = len(cp.procs)
		return cp.start(filepath.Join(dir, "apiserver.log"), bins.APIServer, apiArgs...)
	}
	if err := cp.apiserver(); err != nil {
		cp.Stop()
		return nil, err
	}
	cp.RESTCfg = &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", cp.Port), BearerToken: adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAFile: cert}, QPS: 200, Burst: 400}
	if cp.Admin, err = kubernetes.NewForConfig(cp.RESTCfg); err != nil {
		cp.Stop()
		return nil, err
	}
	if err := cp.waitReady(); err != nil {
		cp.Stop()
		return nil, err
	}
	Logf("apiserver ready")
	return cp, nil
}

func (cp *ControlPlane) waitReady() error {
	// Five minutes: a ready apiserver takes seconds, but CI shares two cores with a TCG VM
	// and sometimes a niced build; this is a hang guard, not a measure.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for {
		body, err := cp.Admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		if ctx.Err() != nil {
			log := filepath.Join(cp.Dir, "apiserver.log")
			return fmt.Errorf("apiserver not ready: %v (log: %s, its end:\n%s\netcd.log's end:\n%s)", err, log,
				tail(log, 30), tail(filepath.Join(cp.Dir, "etcd.log"), 15))
		}
		time.Sleep(time.Second)
	}
}

// StopAPIServer kills the apiserver (etcd keeps the data), to simulate an outage.
func (cp *ControlPlane) StopAPIServer() {
	p := cp.procs[cp.apiProc]
	_ = p.Process.Kill()
	_, _ = p.Process.Wait()
}

// StartAPIServer brings the apiserver back with the same flags and waits until ready.
func (cp *ControlPlane) StartAPIServer() error {
	if err := cp.apiserver(); err != nil {
		return err
	}
	return cp.waitReady()
}

func (cp *ControlPlane) start(logFile, bin string, args ...string) error {
	f, err := os.Create(logFile)
	if err != nil {
		return err
	}
	cmd := tiedToUs(exec.Command(bin, args...))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return err
	}
	cp.procs = append(cp.procs, cmd)
	return nil
}

// Stop ends the processes it started, newest first, and removes the data.
func (cp *ControlPlane) Stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		_ = cp.procs[i].Process.Kill()
		_, _ = cp.procs[i].Process.Wait()
	}
	cp.procs = nil
	if os.Getenv("E2E_KEEP") == "" {
		_ = os.RemoveAll(cp.Dir)
	}
}

// WriteKubeconfig writes an admin kubeconfig for host-side tools (`ipvs-proxier plan`).
func (cp *ControlPlane) WriteKubeconfig(path string) error {
	return os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \""+cp.RESTCfg.Host+
		"\", certificate-authority: "+cp.CACert+"}\nusers:\n- name: u\n  user: {token: "+adminToken+
		"}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"), 0o600)
}

package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/benchkit"
)

// stepFile names one of ours' files at a step (a profile, the daemon's log): kind-n.ext
// for the daemon as the DaemonSet runs it, kind-n-variant.ext for a variant of it
// ("ipvs-proxier routes": -routes), so that two of ours measured at one step keep their
// own files.
func stepFile(p benchkit.Proxy, kind string, n int, ext string) string {
	if v, ok := strings.CutPrefix(p.Name, benchkit.IPVSProxier.Name+" "); ok {
		return fmt.Sprintf("%s-%d-%s.%s", kind, n, v, ext)
	}
	return fmt.Sprintf("%s-%d.%s", kind, n, ext)
}

// profile fetches a pprof profile from the daemon in the VM (started with enableProfiling)
// and writes it to dir/name. The agent returns text, so the profile travels base64; it
// is fetched to a file first, so that a failed fetch is an exit status, not wget's
// message decoded as the profile.
func (b *bench) profile(dir, name, path string) error {
	out, err := b.node.MustExec("wget -qO /tmp/profile.pprof 'http://127.0.0.1:10249/debug/pprof/" + path + "' && base64 -w0 /tmp/profile.pprof")
	if err != nil {
		return err
	}
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
	if err != nil {
		return fmt.Errorf("profile %s: %w", path, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), data, 0o644)
}

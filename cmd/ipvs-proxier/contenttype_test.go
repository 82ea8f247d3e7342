package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAPIContentType: the API client talks protobuf by default, as kube-proxy does
// (clientConnection.contentType), accepting JSON too; the file's fields and
// --kube-api-content-type (without --config) override it.
func TestAPIContentType(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {token: t}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, conf      string
		flags           []string
		content, accept string
	}{
		{"default", "", nil, "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json"},
		{"kubeadm's config.conf", "clientConnection:\n  contentType: \"\"\n  acceptContentTypes: \"\"", nil,
			"application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json"},
		{"JSON from the file", "clientConnection:\n  contentType: application/json", nil, "application/json", ""},
		{"both from the file", "clientConnection:\n  contentType: application/json\n  acceptContentTypes: application/json", nil,
			"application/json", "application/json"},
		{"the flag", "", []string{"--kube-api-content-type=application/json"}, "application/json", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Beside --config the file names the kubeconfig: the flag would be ignored.
			flags, conf := append([]string{"--kubeconfig", kc}, tc.flags...), tc.conf
			if conf != "" {
				flags, conf = tc.flags, strings.Replace(conf, "clientConnection:\n", "clientConnection:\n  kubeconfig: "+kc+"\n", 1)
			}
			cfg, _, err := restConfig(configured(t, flags, conf))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ContentType != tc.content || cfg.AcceptContentTypes != tc.accept {
				t.Errorf("content %q accept %q, want %q %q", cfg.ContentType, cfg.AcceptContentTypes, tc.content, tc.accept)
			}
		})
	}
}

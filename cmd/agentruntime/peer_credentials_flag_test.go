package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --a2a-peer-credentials is read before anything opens: a mistake in it
// (an unknown scheme, an empty secret, a file that is not there) stops dev
// and serve, naming the flag, the file and the entry, never the secret.
func TestA2APeerCredentialsFlag(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.token")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"unknown scheme": {"peers:\n  - {host: painter.example, scheme: digest, secret_env: HOME}\n", `peers[0].scheme: "digest"`},
		"empty secret":   {"peers:\n  - {host: painter.example, scheme: bearer, secret_file: " + empty + "}\n", "peers[0].secret_file"},
		"bad yaml":       {"peers: {", "peers.yaml"},
	} {
		bad := filepath.Join(t.TempDir(), "peers.yaml")
		if err := os.WriteFile(bad, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		for cmd, run := range map[string]func() error{
			"dev": func() error {
				return runDev(context.Background(), []string{"--data-dir", t.TempDir(), "--a2a-peer-credentials", bad}, io.Discard, io.Discard)
			},
			"serve": func() error {
				return runServe(context.Background(), []string{"control", "--a2a-peer-credentials", bad}, io.Discard, io.Discard)
			},
		} {
			err := run()
			if err == nil || !strings.Contains(err.Error(), "--a2a-peer-credentials") || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, %s: %v, want it refused naming the flag, %s and %q", name, cmd, err, bad, c.want)
			}
		}
	}
	c := parseCommon(t, "--a2a-peer-credentials", filepath.Join(t.TempDir(), "missing.yaml"))
	if err := c.check(); err == nil || !strings.Contains(err.Error(), "--a2a-peer-credentials") || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing file: %v", err)
	}
	t.Setenv("AR_A2A_PEER_CREDENTIALS", filepath.Join(t.TempDir(), "from-env.yaml"))
	fromEnv := parseCommon(t)
	if err := fromEnv.check(); err == nil || !strings.Contains(err.Error(), "from-env.yaml") {
		t.Errorf("AR_A2A_PEER_CREDENTIALS is not read: %v", err)
	}
}

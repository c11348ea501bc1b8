package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --a2a-card is read before anything opens: a mistake in it stops dev and
// serve, naming the flag and the key.
func TestA2ACardFlag(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "card.yaml")
	if err := os.WriteFile(bad, []byte("skills:\n  - {id: notes, name: Notes}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func() error{
		"dev": func() error {
			return runDev(context.Background(), []string{"--data-dir", t.TempDir(), "--a2a-card", bad}, io.Discard, io.Discard)
		},
		"serve": func() error {
			return runServe(context.Background(), []string{"control", "--a2a-card", bad}, io.Discard, io.Discard)
		},
	} {
		if err := run(); err == nil || !strings.Contains(err.Error(), "--a2a-card") || !strings.Contains(err.Error(), "skills[0].description: required") {
			t.Errorf("%s: %v, want it refused naming the flag and the key", name, err)
		}
	}
	c := parseCommon(t, "--a2a-card", filepath.Join(t.TempDir(), "missing.yaml"))
	if err := c.check(); err == nil || !strings.Contains(err.Error(), "--a2a-card") {
		t.Errorf("a missing file: %v", err)
	}
}

// Package security holds adversarial end-to-end tests: each attack goes
// through the real binary (built once, with the race detector, by
// pkg/testkit/binproc) and the interface a user or a model has, and each
// test asserts on the effect (what changed on disk, what the event log
// says), never on a log line.
package security

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/testkit/binproc"
)

// bin is the agentruntime binary the tests run.
var bin string

func TestMain(m *testing.M) {
	b, cleanup, err := binproc.Build("", true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = b
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// startDev runs `agentruntime dev` on a fresh data dir with ws as the
// in-process worker's workspace, loopback on a free port, no console, and
// any further flags (e.g. --script FILE).
func startDev(t *testing.T, ws string, args ...string) *binproc.Proc {
	t.Helper()
	return binproc.Start(t, bin, nil, append([]string{"dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--workspace", ws, "--console=false"}, args...)...)
}

// runCLI runs an agentruntime client command and returns what it printed;
// the test fails when it exits non-zero.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("agentruntime %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// writeScript writes a scripted provider file (YAML) into a directory of
// the test's and returns its path, for `dev --script`.
func writeScript(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

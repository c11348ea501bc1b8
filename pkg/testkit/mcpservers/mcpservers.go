// Package mcpservers gives tests the real MCP servers of
// test/mcpservers (@modelcontextprotocol/server-everything and
// server-filesystem, pinned by its package-lock.json): it installs them
// with `npm ci` when they are missing (scripts/test does it first) and
// skips the test, saying why, only when npm is not installed.
package mcpservers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/testkit/binproc"
)

// Everything and Filesystem name the servers' commands.
const (
	Everything = "mcp-server-everything"
	Filesystem = "mcp-server-filesystem"
)

// Bin is the path of a server's command (Everything, Filesystem).
func Bin(t testing.TB, name string) string {
	t.Helper()
	root, err := binproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "test", "mcpservers")
	bin := filepath.Join(dir, "node_modules", ".bin", name)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("node is not installed: the MCP server tests need Node.js and npm (scripts/test installs them): %v", err)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skipf("npm is not installed: the MCP server tests need it to install %s (scripts/test installs it): %v", dir, err)
	}
	if err := install(dir); err != nil {
		t.Fatalf("installing the MCP test servers in %s: %v", dir, err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not installed in %s: %v", name, dir, err)
	}
	return bin
}

// install runs npm ci in dir unless its lock was installed already; a
// file lock keeps test binaries running in parallel from installing at
// once.
func install(dir string) error {
	lock, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	lockJSON, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	// The stamp scripts/lib/node's ensure_npm_deps leaves: the same lock
	// installed once serves both.
	sum := sha256.Sum256(lockJSON)
	stamp := filepath.Join(dir, "node_modules", ".lock-"+hex.EncodeToString(sum[:])[:16])
	if _, err := os.Stat(stamp); err == nil {
		return nil
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci: %v\n%s", err, out)
	}
	return os.WriteFile(stamp, nil, 0o644)
}

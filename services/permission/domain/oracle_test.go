package domain

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/worker/confine"
)

// The test binary is its own sandbox helper (pkg/worker/confine): the
// oracle below runs commands confined through it.
func TestMain(m *testing.M) {
	confine.Main()
	os.Exit(m.Run())
}

// FuzzReadOnlyChangesNothing holds the classifier to what commands do: a
// line every command of which ParseCommand calls read-only is run, confined
// to a scratch workspace it may write (pkg/worker/confine: writes below the
// workspace, reads of it and of the system), and must leave the workspace
// as it found it. The seeds include lines that write while looking like
// reads; `go test` runs them every time, `-fuzz` mutates them.
func FuzzReadOnlyChangesNothing(f *testing.F) {
	for _, s := range []string{
		"ls -la", "cat README.md", "head -2 README.md", "wc -l README.md sub/a.txt", "grep -rn hello .",
		"find . -name '*.txt'", "sort README.md", "sed -n 1p README.md", "cd sub && ls", "diff README.md sub/a.txt",
		"sort -o out README.md", "find . -delete", "find . -fprint out", "sed -i s/hello/bye/ README.md",
		"sed -n 's/hello/bye/w out' README.md", "tee out < README.md", "touch out", "cp README.md out",
		"cat README.md > out", "ls $(touch out)", "echo hi | tee -a README.md", "git -c core.fsmonitor='touch out' status",
		"awk '{print > \"out\"}' README.md", "xargs touch < README.md", "sh -c 'touch out'", "find . -exec touch {}.x ';'",
	} {
		f.Add(s)
	}
	c := confine.Probe()
	f.Fuzz(func(t *testing.T, line string) {
		cmds, err := ParseCommand(line)
		if err != nil || len(cmds) == 0 {
			return
		}
		for _, cmd := range cmds {
			if !cmd.ReadOnly {
				return
			}
		}
		if !c.Available {
			if c.ABI == 0 {
				t.Skipf("this kernel cannot confine with Landlock: %s", c.Reason)
			}
			t.Fatalf("Landlock ABI %d but no confinement: %s", c.ABI, c.Reason)
		}
		ws := t.TempDir()
		for name, body := range map[string]string{"README.md": "hello\nworld\n", "sub/a.txt": "a\n", "sub/b.txt": "hello b\n"} {
			p := filepath.Join(ws, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		before := snapshot(t, ws)
		// A second is long enough for any write a line makes, and short
		// enough that an input that runs on (yes, a read of a pipe) does
		// not hold its fuzz worker past -fuzztime: the fuzzer then fails
		// the run with "context deadline exceeded" (seen in CI).
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		argv, env := c.Wrap(confine.Policy{ReadRoots: []string{ws}, WriteRoots: []string{ws}}, []string{"/bin/sh", "-c", line})
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = ws
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + ws}, env...)
		_ = cmd.Run() // what it printed and how it ended do not matter: only what it changed
		if after := snapshot(t, ws); after != before {
			t.Fatalf("%q is classified read-only, and it changed the workspace:\nbefore %s\nafter  %s", line, before, after)
		}
	})
}

// snapshot is every name below dir with its mode and content hash.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s %v %d\n", rel, info.Mode(), info.Size())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

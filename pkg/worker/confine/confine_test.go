package confine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/worker/confine"
)

// The test binary is the helper too, like the agentruntime binary.
func TestMain(m *testing.M) {
	confine.Main()
	os.Exit(m.Run())
}

// capability skips, saying why, only when the kernel has no Landlock;
// any other reason it cannot confine fails the test.
func capability(t *testing.T) confine.Capability {
	t.Helper()
	c := confine.Probe()
	if !c.Available {
		if c.ABI == 0 {
			t.Skipf("this kernel cannot confine with Landlock: %s", c.Reason)
		}
		t.Fatalf("Landlock ABI %d but no confinement: %s", c.ABI, c.Reason)
	}
	return c
}

// run runs a shell line confined by p in dir and answers its combined
// output and error.
func run(t *testing.T, c confine.Capability, p confine.Policy, dir, line string) (string, error) {
	t.Helper()
	argv, env := c.Wrap(p, []string{"/bin/sh", "-c", line})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME")}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestConfinedCommandStaysInsideItsRoots(t *testing.T) {
	c := capability(t)
	ws, outside, ro := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "notes"), []byte("notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("readme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := confine.Policy{ReadRoots: []string{ro}, WriteRoots: []string{ws}}

	t.Run("a write outside the write roots fails", func(t *testing.T) {
		target := filepath.Join(outside, "x")
		if out, err := run(t, c, p, ws, "echo x > "+target); err == nil {
			t.Fatalf("the write succeeded: %q", out)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Fatalf("%s exists (%v)", target, err)
		}
	})
	t.Run("a write in a read root fails and leaves it unchanged", func(t *testing.T) {
		if out, err := run(t, c, p, ws, "echo changed > "+filepath.Join(ro, "notes")); err == nil {
			t.Fatalf("the write succeeded: %q", out)
		}
		if b, _ := os.ReadFile(filepath.Join(ro, "notes")); string(b) != "notes\n" {
			t.Fatalf("notes = %q", b)
		}
	})
	t.Run("a read outside the read roots fails", func(t *testing.T) {
		out, err := run(t, c, p, ws, "cat "+filepath.Join(outside, "secret"))
		if err == nil || strings.Contains(out, "s3cret") {
			t.Fatalf("read %q (%v)", out, err)
		}
	})
	t.Run("the worker's files and other processes are not readable", func(t *testing.T) {
		out, err := run(t, c, p, ws, "cat /proc/1/environ /etc/shadow /proc/"+strconv.Itoa(os.Getpid())+"/environ")
		if err == nil || strings.Contains(out, "PATH=") {
			t.Fatalf("read %q (%v)", out, err)
		}
	})
	t.Run("writing inside the write root and reading the roots work", func(t *testing.T) {
		out, err := run(t, c, p, ws, "echo made > new && mkdir -p d/e && mv new d/e/moved && cat d/e/moved README "+filepath.Join(ro, "notes")+"")
		if err != nil || out != "made\nreadme\nnotes\n" {
			t.Fatalf("output %q (%v)", out, err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "d", "e", "moved")); string(b) != "made\n" {
			t.Fatalf("moved = %q", b)
		}
	})
	t.Run("a child the command starts is confined too", func(t *testing.T) {
		target := filepath.Join(outside, "child")
		// sh starts sh, which starts a background sh, which writes.
		out, err := run(t, c, p, ws, "/bin/sh -c '(echo pwned > "+target+") & wait $!; echo $? > status'")
		if err != nil {
			t.Fatalf("output %q (%v)", out, err)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Fatalf("%s exists (%v)", target, err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "status")); strings.TrimSpace(string(b)) == "0" {
			t.Fatalf("the child's write succeeded: status %q", b)
		}
	})
	t.Run("git reads the repository in the workspace", func(t *testing.T) {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed")
		}
		repo := filepath.Join(ws, "repo")
		init := exec.Command("sh", "-c", "git init -q repo && cd repo && echo hi > a && git add a && git -c user.email=a@b -c user.name=n commit -qm first")
		init.Dir = ws
		if out, err := init.CombinedOutput(); err != nil {
			t.Fatalf("%s (%v)", out, err)
		}
		out, err := run(t, c, confine.Policy{ReadRoots: []string{ws}}, repo, "git status --short && git log --format=%s")
		if err != nil || out != "first\n" {
			t.Fatalf("output %q (%v)", out, err)
		}
	})
	t.Run("no write roots: read-only", func(t *testing.T) {
		ro := confine.Policy{ReadRoots: []string{ws}}
		out, err := run(t, c, ro, ws, "cat README && echo x > new")
		if err == nil || !strings.Contains(out, "readme") {
			t.Fatalf("output %q (%v)", out, err)
		}
		if _, err := os.Stat(filepath.Join(ws, "new")); !os.IsNotExist(err) {
			t.Fatalf("new exists (%v)", err)
		}
	})
}

// A helper that cannot confine does not run the command.
func TestHelperRefusesRatherThanRunUnconfined(t *testing.T) {
	c := capability(t)
	ws := t.TempDir()
	argv, env := c.Wrap(confine.Policy{WriteRoots: []string{ws}}, []string{"/bin/sh", "-c", "echo ran > " + filepath.Join(ws, "ran")})
	// A malformed helper line: an option without its path.
	argv = append(argv[:1], "--rw")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the command was not run") {
		t.Fatalf("output %q (%v)", out, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); !os.IsNotExist(err) {
		t.Fatalf("the command ran (%v)", err)
	}
}

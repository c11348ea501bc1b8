// Package binproc builds the real agentruntime binary once per test binary
// and runs it as a child process, waiting until it says where it listens.
// End-to-end and adversarial tests use it so that what they try goes
// through the same process a user runs.
package binproc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Build compiles ./cmd/agentruntime of the module rooted at moduleDir
// (found upward from the working directory when empty) into a temporary
// directory, with the race detector when race is set. It returns the path
// of the binary and a function that removes it.
func Build(moduleDir string, race bool) (string, func(), error) {
	if moduleDir == "" {
		root, err := ModuleRoot()
		if err != nil {
			return "", nil, err
		}
		moduleDir = root
	}
	dir, err := os.MkdirTemp("", "agentruntime-bin")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "agentruntime")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/agentruntime")
	cmd := exec.Command("go", args...)
	cmd.Dir = moduleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("build agentruntime: %v\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// ModuleRoot is the nearest directory upward from the working directory
// that holds a go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Proc is a running agentruntime process.
type Proc struct {
	Cmd  *exec.Cmd
	Addr string // host:port of the API, loopback when it listens on all addresses
	out  *Buffer
}

// Output is everything the process printed so far, stdout and stderr.
func (p *Proc) Output() string { return p.out.String() }

// Buffer collects output written from several goroutines.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// WriteString appends v.
func (s *Buffer) WriteString(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(v)
}

// String is what was written.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var (
	listenLine = regexp.MustCompile(`listening\s+(\S+)`)
	servingLog = regexp.MustCompile(`msg=serving .*listen=(\S+)`)
)

// Start runs bin with args (and env added to the test's environment) and
// waits until it is ready: for dev the end of its banner, for serve the
// "serving" log line. The process is killed when the test ends; its output
// is logged when the test failed.
func Start(t testing.TB, bin string, env []string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Proc{Cmd: cmd, out: &Buffer{}}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("agentruntime %v output:\n%s", args, p.out.String())
		}
	})
	addrs := make(chan string, 2)
	scan := func(r io.Reader) {
		sc := bufio.NewScanner(r)
		var addr string
		for sc.Scan() {
			line := sc.Text()
			p.out.WriteString(line + "\n")
			if m := listenLine.FindStringSubmatch(line); m != nil {
				addr = m[1]
			}
			if strings.HasPrefix(line, "Ctrl-C stops it") {
				addrs <- addr
			}
			if m := servingLog.FindStringSubmatch(line); m != nil {
				addrs <- m[1]
			}
		}
	}
	go scan(stdout)
	go scan(stderr)
	select {
	case p.Addr = <-addrs:
	case <-time.After(60 * time.Second):
		t.Fatalf("agentruntime %v did not say where it listens:\n%s", args, p.out.String())
	}
	if strings.HasPrefix(p.Addr, "[::]:") {
		p.Addr = "127.0.0.1:" + strings.TrimPrefix(p.Addr, "[::]:")
	}
	return p
}

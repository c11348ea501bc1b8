// Package natsserver runs a real nats-server as its own process for tests and
// benchmarks of the deployed shape: the binary is built from the
// nats-server module this repository pins in go.mod (once per version, into
// a cache directory), and each server listens on a free loopback port with
// JetStream storing in a temp dir. Unlike pkg/testkit/natstest (in process),
// a Server here can be killed with SIGKILL and restarted on the same port
// and storage, which is what fault tests and serve-shape benchmarks need.
package natsserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ModulePath is the module the binary is built from; its version is the one
// go.mod pins.
const ModulePath = "github.com/nats-io/nats-server/v2"

// EnvBinary names a variable that points at a nats-server binary to use
// instead of building one (it must be the pinned version or newer).
const EnvBinary = "AR_TEST_NATS_SERVER"

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary returns the path of a nats-server binary built from the pinned
// module. The first call in a test binary builds it unless the cache already
// holds this version; concurrent test binaries share one build through a
// lock file.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { buildPath, buildErr = build() })
	if buildErr != nil {
		t.Fatalf("natsserver: %v", buildErr)
	}
	return buildPath
}

// PinnedVersion is the nats-server module version the current module pins
// (go list -m, run where the test runs: inside this repository).
func PinnedVersion() (string, error) {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == ModulePath {
				if m.Replace != nil {
					return m.Replace.Version, nil
				}
				return m.Version, nil
			}
		}
	}
	out, err := exec.Command(goTool(), "list", "-m", "-f", "{{.Version}}", ModulePath).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("go list -m %s: %w", ModulePath, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	// Not on PATH: the toolchain running the tests sets GOROOT for them.
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}

func build() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		return p, nil
	}
	version, err := PinnedVersion()
	if err != nil {
		return "", err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "agentruntime-testkit", "nats-server-"+version+"-"+runtime.GOOS+"-"+runtime.GOARCH)
	bin := filepath.Join(dir, "nats-server")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Test binaries of several packages start at once under `go test ./...`;
	// one builds, the others wait on the lock and find the binary there.
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	goBin := goTool()
	tmp := bin + ".tmp" + strconv.Itoa(os.Getpid())
	// Built in the test's module (its go.mod pins the version); -race and
	// other test flags are not inherited: the server is a dependency, not
	// the code under test.
	cmd := exec.Command(goBin, "build", "-o", tmp, ModulePath)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build %s@%s: %w\n%s", ModulePath, version, err, out.String())
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// Server is a nats-server process with JetStream.
type Server struct {
	// URL is nats://127.0.0.1:PORT; it stays the same across restarts.
	URL      string
	Port     int
	StoreDir string
	// Name is the server's name (-n); cluster nodes are n0, n1, ...
	Name string

	bin  string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	output *lockedBuffer
	// earlier is the output of the runs before the current one.
	earlier string
}

// Start builds (once) and starts a nats-server with JetStream on a free
// loopback port storing in a temp dir of the test; it is killed when the
// test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	s := &Server{bin: bin, StoreDir: t.TempDir()}
	var errs []error
	for range 3 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("natsserver: %v", err)
		}
		s.Port = port
		s.URL = "nats://127.0.0.1:" + strconv.Itoa(port)
		s.args = []string{"-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", s.StoreDir, "-n", "agentruntime-test"}
		if err = s.start(); err == nil {
			t.Cleanup(s.Kill)
			return s
		}
		errs = append(errs, err)
	}
	t.Fatalf("natsserver: %v", errors.Join(errs...))
	return nil
}

// Kill stops the server with SIGKILL (no flush, no goodbye to clients) and
// waits until it is gone. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restart starts the server again on the same port and storage (after Kill)
// and waits until JetStream answers.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	// The port was free a moment ago; a client's reconnect attempts do not
	// take a listening port, so the only failure is a slow kernel release.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("natsserver: restart on %s: %v", s.URL, err)
		}
	}
}

// Running reports whether the process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Output is what the server wrote to stdout and stderr, across its
// restarts (each run after the first begins with a "--- restart" line).
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.output == nil {
		return s.earlier
	}
	return s.earlier + s.output.String()
}

func (s *Server) start() error {
	if err := s.launch(); err != nil {
		return err
	}
	s.mu.Lock()
	exited, out := s.exited, s.output
	s.mu.Unlock()
	if err := waitJetStream(s.URL, exited, 30*time.Second); err != nil {
		s.Kill()
		return fmt.Errorf("nats-server on %s: %w; output:\n%s", s.URL, err, out.String())
	}
	return nil
}

// launch starts the process without waiting for JetStream (a cluster node
// is ready only once a quorum of its peers runs).
func (s *Server) launch() error {
	cmd := exec.Command(s.bin, s.args...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	exited := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that started the
		// child exits; keep this goroutine on its thread while the child lives.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	s.mu.Lock()
	if s.output != nil {
		s.earlier += s.output.String() + "--- restart\n"
	}
	s.cmd, s.exited, s.output = cmd, exited, out
	s.mu.Unlock()
	return nil
}

// waitJetStream polls until the server accepts a connection and JetStream
// answers an account info request, the server exits, or the deadline passes.
func waitJetStream(url string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	backoff := 5 * time.Millisecond
	for {
		err := func() error {
			nc, err := nats.Connect(url, nats.Timeout(500*time.Millisecond), nats.NoReconnect())
			if err != nil {
				return err
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err = js.AccountInfo(ctx)
			return err
		}()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("JetStream not ready within %s: %w", timeout, err)
		}
		select {
		case <-exited:
			return errors.New("exited before JetStream was ready")
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

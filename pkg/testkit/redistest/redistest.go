// Package redistest owns reaching a real Redis from tests. It uses REDIS_URL
// when set and otherwise starts redis-server from PATH; with neither it fails
// the test, naming the fix. It never skips: a suite that silently skips its
// Redis half proves nothing about Redis.
//
// On Linux one server serves the whole test binary and dies with it, even
// when the binary is killed (the kernel's parent-death signal). Elsewhere
// each test gets its own server, stopped in t.Cleanup.
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnvURL names the variable that points tests at an existing Redis.
const EnvURL = "REDIS_URL"

const installHint = "install redis-server (apt-get install redis-server, or brew install redis) " +
	"or set " + EnvURL + "=redis://127.0.0.1:6379/0"

// URL returns the URL of a Redis the test may use: $REDIS_URL, or a server
// started for this test binary. Tests sharing it must keep to their own keys.
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	if !shareServer {
		s, err := start(t.TempDir())
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		t.Cleanup(s.stop)
		return s.url
	}
	sharedOnce.Do(func() {
		// The server persists nothing, so its directory is only where it
		// would write if asked to; removing it once the server runs leaves
		// nothing behind when the binary exits.
		dir, err := os.MkdirTemp("", "redistest-")
		if err != nil {
			sharedErr = err
			return
		}
		defer os.RemoveAll(dir)
		shared, sharedErr = start(dir)
	})
	if sharedErr != nil {
		t.Fatalf("redistest: %v", sharedErr)
	}
	return shared.url
}

// Client returns a client for URL(t) that has answered PING, closed when the
// test ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	url := URL(t)
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("redistest: parse %s=%q: %v", EnvURL, url, err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("redistest: Redis at %s does not answer PING: %v; %s", url, err, installHint)
	}
	return c
}

var (
	sharedOnce sync.Once
	shared     *server
	sharedErr  error
)

type server struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
	output lockedBuffer
}

// start launches redis-server on a free loopback port. Picking a port and
// binding it are not atomic, so a port taken in between is retried.
func start(dir string) (*server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%s is not set and redis-server is not on PATH: %s", EnvURL, installHint)
	}
	var errs []error
	for range 3 {
		s, err := launch(bin, dir)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func launch(bin, dir string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return launchOn(bin, dir, port, false)
}

// launchOn starts redis-server on port, persisting to an append-only file
// in dir when appendOnly (so a kill -9 and a restart keep what was
// written).
func launchOn(bin, dir string, port int, appendOnly bool) (*server, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s := &server{url: "redis://" + addr + "/0", exited: make(chan struct{})}
	aof := "no"
	if appendOnly {
		aof = "yes"
	}
	s.cmd = exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", aof,
		"--appendfsync", "always",
		"--dir", dir,
		"--loglevel", "warning",
	)
	s.cmd.Stdout = &s.output
	s.cmd.Stderr = &s.output
	dieWithParent(s.cmd)

	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that started the
		// child exits, not the process; pin this goroutine to its thread and
		// keep it blocked in Wait for as long as the child lives.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	if err := s.waitReady(addr, 10*time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("redis-server on %s: %w; output:\n%s", addr, err, s.output.String())
	}
	return s, nil
}

// waitReady polls PING until the server answers, exits, or the deadline
// passes.
func (s *server) waitReady(addr string, timeout time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 250 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(timeout)
	backoff := 2 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to PING within %s: %w", timeout, err)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited before answering PING (%v)", s.cmd.ProcessState)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer collects the server's output, written by the process while a
// failing start may read it.
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

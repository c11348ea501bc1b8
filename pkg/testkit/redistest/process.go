package redistest

import (
	"errors"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Server is a redis-server process of one test, for fault tests: it can be
// killed with SIGKILL and restarted on the same port and data directory.
// Unlike URL it never uses REDIS_URL: a test that kills its Redis must own
// it.
type Server struct {
	// URL is redis://127.0.0.1:PORT/0, the same across restarts.
	URL  string
	Port int
	Dir  string

	bin        string
	appendOnly bool
	mu         sync.Mutex
	cur        *server
}

// Options of Start.
type Options struct {
	// AppendOnly persists every write (appendfsync always) to the data
	// directory, as a deployment with AOF on would.
	AppendOnly bool
}

// Start launches redis-server on a free loopback port with its data in a
// temp dir of the test; it is killed when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server is not on PATH: %s", installHint)
	}
	s := &Server{bin: bin, Dir: t.TempDir(), appendOnly: opts.AppendOnly}
	var errs []error
	for range 3 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		cur, err := launchOn(bin, s.Dir, port, opts.AppendOnly)
		if err == nil {
			s.URL, s.Port, s.cur = cur.url, port, cur
			t.Cleanup(s.Kill)
			return s
		}
		errs = append(errs, err)
	}
	t.Fatalf("redistest: %v", errors.Join(errs...))
	return nil
}

// Kill stops the server with SIGKILL and waits until it is gone; killing
// a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	cur := s.cur
	s.cur = nil
	s.mu.Unlock()
	if cur != nil {
		cur.stop()
	}
}

// Restart starts the server again on the same port and directory (after
// Kill) and waits until it answers PING.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		cur, err := launchOn(s.bin, s.Dir, s.Port, s.appendOnly)
		if err == nil {
			s.mu.Lock()
			s.cur = cur
			s.mu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: restart on port %d: %v", s.Port, err)
		}
	}
}

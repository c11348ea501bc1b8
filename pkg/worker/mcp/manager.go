package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// Options tune a Manager; zero values take the defaults.
type Options struct {
	// Dir is where stdio servers start (the worker's workspace).
	Dir string
	// EnvAllow names the worker's environment variables a stdio server
	// inherits besides its config's env (default tools.DefaultEnvAllow):
	// the worker's credentials are not passed on unless named.
	EnvAllow []string
	Logger   *slog.Logger
	// StartTimeout bounds one start: the process or connection, the
	// initialize handshake and the tool listing (default 30s).
	StartTimeout time.Duration
	// CallTimeout bounds a tool call that has no earlier deadline
	// (default 2 minutes).
	CallTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a restart (defaults
	// 250ms and 30s); it doubles per failed attempt and starts over once a
	// server stayed up for StableAfter (default 30s).
	MinBackoff, MaxBackoff, StableAfter time.Duration
	// MaxOutput caps a result's text (default 1 MiB); the worker spills
	// what is above its output budget to the output store.
	MaxOutput int
	// Version is reported to servers as the client's version.
	Version string
	// ElicitationTimeout bounds how long a person is waited for when a
	// server asks for input during a call (default 10 minutes; elicit.go);
	// MaxElicitations how often one call may ask (default
	// DefaultMaxElicitations).
	ElicitationTimeout time.Duration
	MaxElicitations    int
}

// States of a server.
const (
	StateStarting   = "starting"
	StateRunning    = "running"
	StateRestarting = "restarting"
	StateStopped    = "stopped"
)

// Status is a server's state, as facts and notices report it.
type Status struct {
	Name, State string
	// PID of a running stdio server.
	PID int
	// Tools: the worker's names of its tools (mcp__<server>__<tool>).
	Tools []string
	// Restarts so far; LastError is why the server last failed or exited.
	Restarts  int
	LastError string
	// NextAttempt is when a restarting server is tried again.
	NextAttempt time.Time
	// Skipped are tools the server listed that are not offered, and why.
	Skipped []string
}

// Manager runs the servers of a config.
type Manager struct {
	opts    Options
	servers []*server
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	changed chan struct{}
}

// Start starts every server of cfg and supervises them until Close. It
// waits (up to StartTimeout) until each server is running or has failed
// its first attempt, so a worker's first turn sees the tools of the
// servers that start.
func Start(ctx context.Context, cfg Config, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if len(opts.EnvAllow) == 0 {
		opts.EnvAllow = tools.DefaultEnvAllow
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.StartTimeout, 30*time.Second)
	def(&opts.CallTimeout, 2*time.Minute)
	def(&opts.MinBackoff, 250*time.Millisecond)
	def(&opts.MaxBackoff, 30*time.Second)
	def(&opts.StableAfter, 30*time.Second)
	def(&opts.ElicitationTimeout, 10*time.Minute)
	if opts.MaxElicitations <= 0 {
		opts.MaxElicitations = DefaultMaxElicitations
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = 1 << 20
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &Manager{opts: opts, cancel: cancel, changed: make(chan struct{}, 1)}
	var first sync.WaitGroup
	for _, name := range cfg.Names() {
		s := &server{m: m, name: name, cfg: cfg.Servers[name], status: Status{Name: name, State: StateStarting}}
		m.servers = append(m.servers, s)
		first.Add(1)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.supervise(ctx, first.Done)
		}()
	}
	first.Wait()
	return m
}

// Close stops the servers (a stdio server's stdin is closed, then it is
// terminated) and waits for them.
func (m *Manager) Close() {
	m.cancel()
	m.wg.Wait()
}

// Changed is signalled (never closed) when a server's state or tools
// changed.
func (m *Manager) Changed() <-chan struct{} { return m.changed }

func (m *Manager) notify() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Tools are the tools of the servers running now, sorted by name.
func (m *Manager) Tools() []tools.Tool {
	var out []tools.Tool
	for _, s := range m.servers {
		s.mu.Lock()
		for _, t := range s.tools {
			out = append(out, t)
		}
		s.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec().Name < out[j].Spec().Name })
	return out
}

// Statuses are the servers' states, by name.
func (m *Manager) Statuses() []Status {
	out := make([]Status, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s.snapshot())
	}
	return out
}

// Status is one server's state.
func (m *Manager) Status(name string) (Status, bool) {
	for _, s := range m.servers {
		if s.name == name {
			return s.snapshot(), true
		}
	}
	return Status{}, false
}

// Notices say, one line per server that is not running, that its tools
// cannot be called now and why: the model is told.
func (m *Manager) Notices() []string {
	var out []string
	for _, st := range m.Statuses() {
		if st.State == StateRunning {
			continue
		}
		line := fmt.Sprintf("The MCP server %q is %s; its tools (mcp__%s__*) are unavailable until it is back", st.Name, st.State, st.Name)
		if st.LastError != "" {
			line += " (" + st.LastError + ")"
		}
		out = append(out, line+".")
	}
	return out
}

// Facts describe every server's state for the tool inventory: key
// mcp_server.<name>.
func (m *Manager) Facts() map[string]string {
	out := map[string]string{}
	for _, st := range m.Statuses() {
		v := st.State
		switch st.State {
		case StateRunning:
			v += fmt.Sprintf(", %d tools", len(st.Tools))
			if st.PID != 0 {
				v += fmt.Sprintf(", pid %d", st.PID)
			}
		case StateRestarting:
			if !st.NextAttempt.IsZero() {
				v += ", next attempt at " + st.NextAttempt.UTC().Format(time.RFC3339Nano)
			}
		}
		v += fmt.Sprintf(", %d restarts", st.Restarts)
		if st.LastError != "" {
			v += "; last failure: " + st.LastError
		}
		out["mcp_server."+st.Name] = clipUTF8(v, 1000)
	}
	return out
}

// server is one supervised server.
type server struct {
	m    *Manager
	name string
	cfg  ServerConfig

	mu      sync.Mutex
	session *mcp.ClientSession
	tools   []*Tool
	status  Status
	// calls are the calls in flight (elicitations find theirs).
	calls map[*call]struct{}
	// listing serializes tool listings (the initial one and those a
	// tools/list_changed notification asks for).
	listing sync.Mutex
}

func (s *server) snapshot() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Tools = nil
	for _, t := range s.tools {
		st.Tools = append(st.Tools, t.spec.Name)
	}
	st.Skipped = append([]string(nil), s.status.Skipped...)
	return st
}

// supervise runs the server, restarting it with a backoff, until ctx ends;
// firstDone is called once the first attempt succeeded or failed.
func (s *server) supervise(ctx context.Context, firstDone func()) {
	log := s.m.opts.Logger.With("mcp_server", s.name)
	backoff := s.m.opts.MinBackoff
	once := sync.OnceFunc(firstDone)
	defer once()
	for attempt := 0; ctx.Err() == nil; attempt++ {
		began := time.Now()
		sess, proc, err := s.connect(ctx)
		var offered []*Tool
		var skipped []string
		if err == nil {
			if offered, skipped, err = s.list(ctx, sess); err != nil {
				sess.Close()
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Warn("MCP server failed to start", "error", err, "attempt", attempt+1)
			s.down(fmt.Sprintf("failed to start: %v%s", err, proc.stderrTail()), backoff)
			once()
		} else {
			s.mu.Lock()
			s.session, s.status.State, s.status.PID, s.status.NextAttempt = sess, StateRunning, proc.pid(), time.Time{}
			s.tools, s.status.Skipped = offered, skipped
			s.mu.Unlock()
			log.Info("MCP server running", "tools", len(s.snapshot().Tools), "pid", proc.pid())
			s.m.notify()
			once()
			stop := context.AfterFunc(ctx, func() { sess.Close() })
			waitErr := sess.Wait()
			stop()
			if ctx.Err() != nil {
				break
			}
			why := "exited"
			if st := proc.exitState(); st != "" {
				why += " (" + st + ")"
			} else if waitErr != nil {
				why += " (" + waitErr.Error() + ")"
			}
			why += proc.stderrTail()
			if time.Since(began) >= s.m.opts.StableAfter {
				backoff = s.m.opts.MinBackoff
			}
			log.Warn("MCP server stopped; restarting", "reason", why, "in", backoff)
			s.down(why, backoff)
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, s.m.opts.MaxBackoff)
		s.mu.Lock()
		s.status.Restarts++
		s.mu.Unlock()
	}
	s.mu.Lock()
	sess := s.session
	s.session, s.tools, s.status.State, s.status.PID = nil, nil, StateStopped, 0
	s.mu.Unlock()
	if sess != nil {
		sess.Close()
	}
	s.m.notify()
}

// down marks the server restarting after why, its tools withdrawn.
func (s *server) down(why string, wait time.Duration) {
	s.mu.Lock()
	s.session, s.tools, s.status.PID = nil, nil, 0
	s.status.State, s.status.LastError, s.status.NextAttempt = StateRestarting, clipUTF8(why, 600), time.Now().Add(wait)
	s.mu.Unlock()
	s.m.notify()
}

// connect starts the server (or reaches it) and runs the handshake.
func (s *server) connect(ctx context.Context) (*mcp.ClientSession, *process, error) {
	proc := &process{}
	var transport mcp.Transport
	switch s.cfg.Type {
	case TypeHTTP:
		transport = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, MaxRetries: 2,
			HTTPClient: &http.Client{Transport: headers{h: s.cfg.Headers, next: http.DefaultTransport}}}
	default:
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Dir = s.m.opts.Dir
		cmd.Env = s.env()
		// Its own process group, and killed with the worker: a server
		// never outlives the worker that started it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Stderr = &proc.stderr
		proc.cmd = cmd
		transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentruntime-worker", Version: s.m.opts.Version}, &mcp.ClientOptions{
		// No roots or sampling: a server gets nothing of the worker's but
		// the calls the model makes, and, during one, may ask a person for
		// input (form elicitation; elicit.go).
		Capabilities:       &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: s.elicit,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			go s.relist(ctx)
		},
	})
	cctx, cancel := context.WithTimeout(ctx, s.m.opts.StartTimeout)
	defer cancel()
	sess, err := client.Connect(cctx, transport, nil)
	if err != nil {
		proc.kill()
		return nil, proc, err
	}
	return sess, proc, nil
}

// env is a stdio server's environment: the allowed variables of the
// worker's, then its config's.
func (s *server) env() []string {
	var env []string
	for _, k := range s.m.opts.EnvAllow {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(s.cfg.Env))
	for k := range s.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+s.cfg.Env[k])
	}
	return env
}

// relist lists the tools again after the server said they changed.
func (s *server) relist(ctx context.Context) {
	s.mu.Lock()
	sess := s.session
	s.mu.Unlock()
	if sess == nil {
		return // the listing after the handshake will see them
	}
	offered, skipped, err := s.list(ctx, sess)
	if err != nil {
		s.m.opts.Logger.Warn("MCP server: listing tools after list_changed", "mcp_server", s.name, "error", err)
		return
	}
	s.mu.Lock()
	if s.session == sess {
		s.tools, s.status.Skipped = offered, skipped
	}
	s.mu.Unlock()
	s.m.notify()
}

// MaxToolsPerServer bounds the tools one server offers the model.
const MaxToolsPerServer = 128

// list lists the server's tools: those offered, and why the others are
// not.
func (s *server) list(ctx context.Context, sess *mcp.ClientSession) ([]*Tool, []string, error) {
	s.listing.Lock()
	defer s.listing.Unlock()
	lctx, cancel := context.WithTimeout(ctx, s.m.opts.StartTimeout)
	defer cancel()
	var out []*Tool
	var skipped []string
	seen := map[string]bool{}
	for t, err := range sess.Tools(lctx, nil) {
		if err != nil {
			return nil, nil, fmt.Errorf("listing tools: %w", err)
		}
		tool, why := newTool(s, t)
		switch {
		case why != "":
			skipped = append(skipped, why)
		case seen[tool.spec.Name]:
			skipped = append(skipped, fmt.Sprintf("%q: another tool of the server has the name %s", clipUTF8(t.Name, 80), tool.spec.Name))
		case len(out) >= MaxToolsPerServer:
			skipped = append(skipped, fmt.Sprintf("%q: the server lists more than %d tools", clipUTF8(t.Name, 80), MaxToolsPerServer))
		default:
			seen[tool.spec.Name] = true
			out = append(out, tool)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].spec.Name < out[j].spec.Name })
	for _, why := range skipped {
		s.m.opts.Logger.Warn("MCP server: a tool is not offered", "mcp_server", s.name, "why", why)
	}
	return out, skipped, nil
}

// current is the running session, or why there is none.
func (s *server) current() (*mcp.ClientSession, Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session, s.status
}

// process is a stdio server's process (nil fields for an http server).
type process struct {
	cmd    *exec.Cmd
	stderr tail
}

func (p *process) pid() int {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *process) exitState() string {
	if p == nil || p.cmd == nil || p.cmd.ProcessState == nil {
		return ""
	}
	return p.cmd.ProcessState.String()
}

func (p *process) kill() {
	if pid := p.pid(); pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

func (p *process) stderrTail() string {
	if p == nil {
		return ""
	}
	if t := strings.TrimSpace(p.stderr.String()); t != "" {
		return "; stderr: " + t
	}
	return ""
}

// tail keeps the last bytes a server wrote to stderr.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 512

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.buf), "")
}

// headers adds an http server's configured headers to every request.
type headers struct {
	h    map[string]string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.h {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

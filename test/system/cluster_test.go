package system_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/agentruntime/agentruntime/pkg/endpoints"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

// binary is the real agentruntime, built once for the package. It is built
// without -race: seven of them run at once on a CI machine of two cores,
// and the race detector already runs on the same code in every other
// package's tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentruntime-system")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "agentruntime")
	if out, err := exec.Command("go", "build", "-o", binary, "../../cmd/agentruntime").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build agentruntime: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Keys of the auth file: the CLI acts as an operator, the worker as a
// worker, both in tenant acme.
const (
	tenant      = "acme"
	operatorKey = "system-test-operator-key"
	workerKey   = "system-test-worker-key"
)

// cluster is the deployed shape on loopback: nats-server and redis-server
// processes, the five `agentruntime serve` processes, a worker process.
type cluster struct {
	t        *testing.T
	nats     *natsserver.Server
	redis    *redistest.Server
	authFile string
	models   string
	services map[string]*proc
	worker   *proc
	ws       string
}

// proc is one agentruntime process; restartable on the same arguments.
type proc struct {
	name string
	// bin is the binary it runs; empty: the one built from this tree.
	bin  string
	args []string
	env  []string
	port int // 0 for the worker

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	out    *logBuffer
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{t: t, services: map[string]*proc{}, ws: workspace(t), models: demoModels(t)}
	c.nats = natsserver.Start(t)
	c.redis = redistest.Start(t, redistest.Options{AppendOnly: true})
	c.authFile = writeAuth(t)
	for _, name := range endpoints.Services {
		c.services[name] = c.serveProc(name, name, c.nats.URL)
	}
	// Started together: each replays its projections on its own.
	for _, p := range c.services {
		p.start(t)
	}
	for _, p := range c.services {
		c.waitServing(p.name)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.all() {
				t.Logf("--- %s output:\n%s", p.name, p.out.String())
			}
			t.Logf("--- nats-server output:\n%s", c.nats.Output())
		}
	})
	return c
}

// serveProc is `agentruntime serve <name>` on a port of its own, not
// started yet; extra flags follow the usual ones.
func (c *cluster) serveProc(label, name, natsURLs string, extra ...string) *proc {
	p := &proc{name: label, port: freePort(c.t)}
	p.args = []string{"serve", name, "--listen", "127.0.0.1:" + strconv.Itoa(p.port), "--nats", natsURLs, "--redis", c.redis.URL, "--auth", c.authFile, "--log-level", "warn"}
	if name == "routing" {
		p.args = append(p.args, "--models", c.models)
	}
	p.args = append(p.args, extra...)
	return p
}

// workspace is the workers' directory: a project with a README to read.
func workspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# A project\nIt says hello.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// demoModels is the model registry the README's tour routes with.
func demoModels(t *testing.T) string {
	t.Helper()
	models, err := filepath.Abs("../../cmd/agentruntime/demo-models.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return models
}

func (c *cluster) all() []*proc {
	var out []*proc
	for _, n := range endpoints.Services {
		out = append(out, c.services[n])
	}
	if c.worker != nil {
		out = append(out, c.worker)
	}
	return out
}

// endpoints is the --endpoints value naming every service's own port.
func (c *cluster) endpoints() string {
	var parts []string
	for _, n := range endpoints.Services {
		parts = append(parts, n+"=127.0.0.1:"+strconv.Itoa(c.services[n].port))
	}
	return strings.Join(parts, ",")
}

// startWorker runs `agentruntime worker` with its endpoints from
// AR_ENDPOINTS (the environment form; the CLI uses the flag) and --addr
// pointing at nothing: every call must go through the map. Extra flags
// follow the usual ones.
func (c *cluster) startWorker(extra ...string) {
	c.worker = &proc{name: "worker",
		args: append([]string{"worker", "--addr", "127.0.0.1:1", "--api-key", workerKey, "--workspace", c.ws, "--lease-ttl", "15s", "--no-network-isolation"}, extra...),
		env:  []string{"AR_ENDPOINTS=" + c.endpoints()},
	}
	c.worker.start(c.t)
}

// cli runs one CLI command through the endpoints map and returns stdout.
func (c *cluster) cli(args ...string) string {
	c.t.Helper()
	// Flags go before the positional arguments (the flag package stops at
	// the first of those).
	full := append([]string{args[0], "--endpoints", c.endpoints(), "--addr", "127.0.0.1:1", "--api-key", operatorKey}, args[1:]...)
	cmd := exec.Command(binary, full...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("agentruntime %v: %v\n%s%s", args, err, out, stderr.String())
	}
	return string(out)
}

// conn is a client of the whole cluster through the endpoints map, acting
// as the operator.
func (c *cluster) conn() *endpoints.Conn {
	c.t.Helper()
	m, err := endpoints.Parse(c.endpoints(), "")
	if err != nil {
		c.t.Fatal(err)
	}
	conn, err := endpoints.Dial(m, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	return conn
}

func operatorCtx(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+operatorKey)
}

// health asks a serve process (on its own port) for a health name.
func (c *cluster) health(name, healthName string) healthpb.HealthCheckResponse_ServingStatus {
	c.t.Helper()
	cc, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(c.services[name].port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: healthName})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	return resp.GetStatus()
}

// waitHealth polls until a serve process answers want for a health name.
func (c *cluster) waitHealth(name, healthName string, want healthpb.HealthCheckResponse_ServingStatus) {
	c.t.Helper()
	var got healthpb.HealthCheckResponse_ServingStatus
	testkit.EventuallyWithin(c.t, 60*time.Second, func() string {
		return fmt.Sprintf("%s health %q is %v, want %v:\n%s", name, healthName, got, want, c.services[name].out.String())
	}, func() bool {
		got = c.health(name, healthName)
		return got == want
	})
}

// waitServing polls the service's health on its own port until SERVING.
func (c *cluster) waitServing(name string) {
	c.t.Helper()
	p := c.services[name]
	cc, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(p.port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	var resp *healthpb.HealthCheckResponse
	testkit.EventuallyWithin(c.t, 60*time.Second, func() string {
		return fmt.Sprintf("%s not SERVING (%v, %v):\n%s", name, resp, err, p.out.String())
	}, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err = hc.Check(ctx, &healthpb.HealthCheckRequest{Service: endpoints.HealthName(name)})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return true
		}
		if !p.running() {
			c.t.Fatalf("%s exited before serving:\n%s", name, p.out.String())
		}
		return false
	})
}

// killAndRestart kills a serve process with SIGKILL, starts it again on
// the same port and waits until it serves.
func (c *cluster) killAndRestart(name string) {
	c.t.Helper()
	p := c.services[name]
	p.kill()
	p.start(c.t)
	c.waitServing(name)
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	bin := p.bin
	if bin == "" {
		bin = binary
	}
	cmd := exec.Command(bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if p.out == nil {
		p.out = &logBuffer{}
	}
	fmt.Fprintf(p.out, "=== start %v\n", p.args)
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.mu.Lock()
	first := p.cmd == nil
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	if first {
		t.Cleanup(p.kill)
	}
}

func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func writeAuth(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sum := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	cfg := fmt.Sprintf(`api_keys:
  - {name: system-operator, tenant: %s, role: admin, key_sha256: %s}
  - {name: system-worker, tenant: %s, role: worker, key_sha256: %s}
`, tenant, sum(operatorKey), tenant, sum(workerKey))
	path := filepath.Join(dir, "auth.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// watchJSON runs `agentruntime watch --json --until-turn-ends` and
// delivers its events' types (and the events) as they come.
type watcher struct {
	cmd    *exec.Cmd
	events chan map[string]any
	seen   []string
}

func (c *cluster) watch(from uint64) *watcher {
	c.t.Helper()
	cmd := exec.Command(binary, "watch", "--json", "--until-turn-ends", "--from", strconv.FormatUint(from, 10),
		"--endpoints", c.endpoints(), "--addr", "127.0.0.1:1", "--api-key", operatorKey)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	w := &watcher{cmd: cmd, events: make(chan map[string]any)}
	go func() {
		defer close(w.events)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			ev, err := decodeJSON(sc.Bytes())
			if err != nil {
				c.t.Errorf("watch --json printed %q: %v", sc.Text(), err)
				continue
			}
			w.events <- ev
		}
	}()
	return w
}

func (w *watcher) until(t *testing.T, typ string) map[string]any {
	t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				t.Fatalf("watch ended before %s; saw %v", typ, w.seen)
			}
			w.seen = append(w.seen, fmt.Sprint(ev["type"]))
			if ev["type"] == typ {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s within 90s; saw %v", typ, w.seen)
		}
	}
}

var _ io.Writer = (*logBuffer)(nil)

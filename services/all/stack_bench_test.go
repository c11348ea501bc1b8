package all_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/natsembed"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
	"github.com/agentruntime/agentruntime/services/all"
	"github.com/agentruntime/agentruntime/services/kit"
)

// The benchmarks of this package run the services in the two shapes the
// runtime is deployed in, measured from outside (gRPC on loopback):
//
//   - dev: JetStream embedded in the process (in-process connection), read
//     models in memory;
//   - serve: nats-server and redis-server as their own processes, read
//     models and counters in Redis, one NATS connection per service.
//
// In the serve shape they also count what an operation costs the servers:
// NATS messages from nats-server's own /varz, Redis commands from INFO
// commandstats (commands run by scripts included).

type shape string

const (
	dev   shape = "dev"
	serve shape = "serve"
)

// natsProc is a nats-server process with JetStream and its monitoring
// endpoint, built from the pinned module.
type natsProc struct {
	url, monitor string
	kill         func()
}

func startNATS(b testing.TB, dir string) *natsProc {
	b.Helper()
	bin := natsserver.Binary(b)
	port, mport := freePort(b), freePort(b)
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-m", strconv.Itoa(mport), "-js", "-sd", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var once sync.Once
	kill := func() { once.Do(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }) }
	b.Cleanup(kill)
	p := &natsProc{url: fmt.Sprintf("nats://127.0.0.1:%d", port), monitor: fmt.Sprintf("http://127.0.0.1:%d", mport), kill: kill}
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := nats.Connect(p.url)
		if err == nil {
			nc.Close()
			return p
		}
		if time.Now().After(deadline) {
			b.Fatalf("nats-server never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // a process starting: nothing to wait on but its port
	}
}

func freePort(b testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// varz returns nats-server's total messages in and out.
func (p *natsProc) varz(b testing.TB) (in, out int64) {
	resp, err := http.Get(p.monitor + "/varz")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		InMsgs  int64 `json:"in_msgs"`
		OutMsgs int64 `json:"out_msgs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		b.Fatal(err)
	}
	return v.InMsgs, v.OutMsgs
}

// redisCommands returns the calls of every command since the server
// started (INFO commandstats), and their total.
func redisCommands(b testing.TB, c *redis.Client) (map[string]int64, int64) {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	var total int64
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		calls, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
		out[name] = calls
		total += calls
	}
	return out, total
}

// stack is the runtime's services (the ones a benchmark asks for) in one
// shape, each with its own gRPC server.
type stack struct {
	shape  shape
	nats   *natsProc         // serve
	embed  *natsembed.Server // dev
	redis  *redis.Client     // serve
	addr   map[string]string
	logs   map[string]*eventlog.Log
	stores map[string]projection.Store
	stop   func()
	models string // routing's --models file
}

func newStack(b testing.TB, sh shape, services ...string) *stack {
	b.Helper()
	return newStackAt(b, sh, b.TempDir(), services...)
}

// newStackModels is newStack with routing's model registry file.
func newStackModels(b testing.TB, sh shape, models string, services ...string) *stack {
	b.Helper()
	return newStackWith(b, sh, b.TempDir(), models, 1, services...)
}

// newStackOf is newStack on a log of partitions streams.
func newStackOf(b testing.TB, sh shape, partitions int, services ...string) *stack {
	b.Helper()
	return newStackWith(b, sh, b.TempDir(), "", partitions, services...)
}

// newStackAt runs the services on a log stored in dir (a log written
// before, for rebuilds).
func newStackAt(b testing.TB, sh shape, dir string, services ...string) *stack {
	b.Helper()
	return newStackWith(b, sh, dir, "", 1, services...)
}

func newStackWith(b testing.TB, sh shape, dir, models string, partitions int, services ...string) *stack {
	b.Helper()
	s := &stack{shape: sh, addr: map[string]string{}, logs: map[string]*eventlog.Log{}, stores: map[string]projection.Store{}, models: models}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// stop ends the services, then the connections and the servers of this
	// stack (once; also at cleanup).
	var closers []func()
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		})
	}
	b.Cleanup(s.stop)
	connect := func() *nats.Conn {
		nc := s.natsConn(b)
		closers = append(closers, nc.Close)
		return nc
	}
	if sh == dev {
		srv, err := natsembed.Start(natsembed.Config{StoreDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		closers = append(closers, srv.Shutdown)
		s.embed = srv
	} else {
		s.nats = startNATS(b, dir)
		closers = append(closers, s.nats.kill)
		s.redis = redistest.Client(b)
	}
	var devLog *eventlog.Log
	feeds := map[*eventlog.Log]*projector.Feed{}
	for _, name := range services {
		// dev: one process, one connection; serve: a process per service.
		var log *eventlog.Log
		if sh == dev && devLog != nil {
			log = devLog
		} else {
			var err error
			if log, err = eventlog.Open(ctx, connect(), eventlog.Config{Partitions: partitions}); err != nil {
				b.Fatal(err)
			}
			devLog = log
		}
		s.logs[name] = log
		deps := kit.Deps{Log: log, Config: kit.Config{ModelsFile: s.models}}
		if sh == dev {
			deps.Store = projection.NewMemory()
		} else {
			// As serve keeps them: under the generation of the service's
			// fold versions (docs/upgrading.md).
			deps.Store = projection.NewRedisGeneration(s.redis, "agentruntime:"+name+":"+ids.New("ns"), all.Generation(name))
			deps.Redis = s.redis
		}
		s.stores[name] = deps.Store
		svc, err := all.New(name, deps)
		if err != nil {
			b.Fatal(err)
		}
		g, err := server.New(server.Config{Authenticator: auth.Anonymous("acme")})
		if err != nil {
			b.Fatal(err)
		}
		svc.Register(g.GRPC())
		// Serving from the start, as a worker waits to see (readiness).
		g.MarkServing(svc.HealthName())
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = g.Serve(ctx, lis) })
		if r, ok := svc.(kit.Runner); ok {
			// As the binary runs them: one feed per process (dev: every
			// service; serve: the one) for all its projectors.
			if feeds[log] == nil {
				feeds[log] = projector.NewFeed(log)
			}
			runCtx := projector.ContextWithOptions(ctx, projector.WithFeed(feeds[log]))
			wg.Go(func() { _ = r.Run(runCtx) })
		}
		s.addr[name] = lis.Addr().String()
	}
	return s
}

// natsConn is a new connection to the stack's NATS server (the caller
// closes it).
func (s *stack) natsConn(b testing.TB) *nats.Conn {
	b.Helper()
	var nc *nats.Conn
	var err error
	if s.shape == dev {
		nc, err = s.embed.Connect()
	} else {
		nc, err = nats.Connect(s.nats.url)
	}
	if err != nil {
		b.Fatal(err)
	}
	return nc
}

func (s *stack) conn(b testing.TB, service string) *grpc.ClientConn {
	b.Helper()
	c, err := grpc.NewClient(s.addr[service], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// counted runs op n times and returns what it cost the servers per call.
type cost struct {
	natsIn, natsOut, redis float64
	redisBy                map[string]float64
}

func (s *stack) count(b testing.TB, n int, op func(i int)) cost {
	b.Helper()
	if s.shape != serve {
		for i := 0; i < n; i++ {
			op(i)
		}
		return cost{}
	}
	in0, out0 := s.nats.varz(b)
	by0, r0 := redisCommands(b, s.redis)
	for i := 0; i < n; i++ {
		op(i)
	}
	in1, out1 := s.nats.varz(b)
	by1, r1 := redisCommands(b, s.redis)
	// INFO itself is one command per call.
	c := cost{natsIn: float64(in1-in0) / float64(n), natsOut: float64(out1-out0) / float64(n),
		redis: float64(r1-r0-1) / float64(n), redisBy: map[string]float64{}}
	for k, v := range by1 {
		if d := v - by0[k]; d > 0 && k != "info" {
			c.redisBy[k] = float64(d) / float64(n)
		}
	}
	return c
}

func (c cost) report(b *testing.B, prefix string) {
	b.ReportMetric(c.natsIn, prefix+"nats-in/op")
	b.ReportMetric(c.natsOut, prefix+"nats-out/op")
	b.ReportMetric(c.redis, prefix+"redis-cmds/op")
}

func (c cost) String() string {
	var parts []string
	for k, v := range c.redisBy {
		parts = append(parts, fmt.Sprintf("%s=%.2f", k, v))
	}
	return fmt.Sprintf("nats in %.2f out %.2f, redis %.2f (%s)", c.natsIn, c.natsOut, c.redis, strings.Join(parts, " "))
}

// rss is the process's resident set in MiB.
func rss() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// waitFor waits until service's read model named projectionName has
// applied seq.
func (s *stack) waitFor(b testing.TB, service, projectionName string, seq uint64) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := s.stores[service].WaitFor(ctx, projectionName, seq); err != nil {
		b.Fatalf("%s's %s never reached %d: %v", service, projectionName, seq, err)
	}
}

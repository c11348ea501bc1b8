package main

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/natsembed"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
	"github.com/agentruntime/agentruntime/services/all"
	"github.com/agentruntime/agentruntime/services/control"
	controlreadmodel "github.com/agentruntime/agentruntime/services/control/readmodel"
)

// gatedStore is a generation's Redis store whose writes wait until open is
// closed: the test holds a rebuild where it wants to look at it.
type gatedStore struct {
	*projection.Redis
	open chan struct{}
}

func (g gatedStore) Apply(ctx context.Context, b projection.Batch) (bool, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return g.Redis.Apply(ctx, b)
}

// controlProcess is `serve control` in this test process: the binary's
// runtime (health, readiness, metrics) on the shared NATS and Redis, with
// the control store at generation gen.
type controlProcess struct {
	addr, metrics string
	client        controlv1.ControlServiceClient
	health        grpc_health_v1.HealthClient
	stop          func()
}

func startControl(t *testing.T, nats *natsembed.Server, rdb *redis.Client, namespace string, gen projection.Generation, open chan struct{}) *controlProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log, err := eventlog.Open(ctx, natstest.Connect(t, nats), eventlog.Config{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	be := backend{log: log, redis: rdb, storeFor: func(service string) projection.Store {
		s := projection.NewRedisGeneration(rdb, namespace+":"+service, gen)
		if open == nil {
			return s
		}
		return gatedStore{s, open}
	}}
	c := common{listen: "127.0.0.1:0", metricsListen: "127.0.0.1:0", logLevel: slog.LevelError, shutdownTimeout: time.Second,
		readyMaxLag: 10000, readyFailingFor: 5 * time.Second,
		appendEvents: defaultAppendEventsPerSecond, appendBytes: defaultAppendBytesPerSecond, maxStreams: defaultMaxStreams}
	rt, err := newRuntime(ctx, c, []string{control.Name}, auth.Anonymous("acme"), be, io.Discard)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- rt.serve(ctx, func(addr string) { ready <- addr }) }()
	p := &controlProcess{}
	select {
	case p.addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("serve control at %s: %v", gen, err)
	}
	var once bool
	p.stop = func() {
		if !once {
			once = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve control at %s: %v", gen, err)
			}
		}
	}
	t.Cleanup(p.stop)
	p.metrics = "http://" + rt.metricsAddr + "/metrics"
	conn := dial(t, p.addr)
	p.client, p.health = controlv1.NewControlServiceClient(conn), grpc_health_v1.NewHealthClient(conn)
	return p
}

func (p *controlProcess) serving(t *testing.T) grpc_health_v1.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := p.health.Check(testkit.Context(t), &grpc_health_v1.HealthCheckRequest{Service: control.HealthName})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetStatus()
}

func (p *controlProcess) thread(t *testing.T) *controlv1.ThreadRead {
	t.Helper()
	resp, err := p.client.GetThreadRead(testkit.Context(t), &controlv1.GetThreadReadRequest{SessionId: "s1", ThreadId: "th1"})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetThread()
}

// keysOf counts the Redis keys of a generation of the control store.
func keysOf(t *testing.T, rdb *redis.Client, namespace, gen string) int {
	t.Helper()
	keys, err := rdb.Keys(testkit.Context(t), "ar:{"+namespace+":control}:"+gen+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// bumped is control's generation with the thread read model's fold
// version raised by n: what a release that changes the fold ships.
func bumped(n int) projection.Generation {
	folds := all.Folds[control.Name]
	out := make([]projection.Fold, len(folds))
	for i, f := range folds {
		if f.Name == controlreadmodel.Name {
			f.Version += n
		}
		out[i] = f
	}
	return projection.NewGeneration(out...)
}

// An upgrade loses nothing: a control process of fold version N+1
// started beside one of N on the same NATS and Redis builds its read
// models from the log beside N's, which keep answering the old process;
// it is NOT_SERVING (and says so in its metrics) until it has caught up,
// then answers what the old one answers and is the active generation.
// A third version then retires the first (two behind) and keeps the
// second (the rollback target).
func TestUpgradeRebuildsBesideTheOldReadModels(t *testing.T) {
	srv := natstest.Server(t)
	rdb := redistest.Client(t)
	namespace := "upgrade-" + rand.Text()
	genN, genN1, genN2 := bumped(0), bumped(1), bumped(2)
	active := func() string {
		s := projection.NewRedisGeneration(rdb, namespace+":"+control.Name, genN)
		defer s.Close()
		id, err := s.ActiveGeneration(testkit.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	// Version N on an empty log: active at once.
	old := startControl(t, srv, rdb, namespace, genN, nil)
	if s := old.serving(t); s != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Fatalf("version N on an empty log: %v, want SERVING", s)
	}
	ctx := testkit.Context(t)
	input := []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}
	first, err := old.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: input})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: input}); err != nil {
		t.Fatal(err)
	}
	var before *controlv1.ThreadRead
	testkit.Eventually(t, "version N folds the active turn and the queued one", func() bool {
		before = old.thread(t)
		return before.GetActiveTurnId() == first.GetTurn().GetTurnId() && len(before.GetQueuedTurnIds()) == 1
	})

	// Version N+1, its writes held: NOT_SERVING, the old keys untouched.
	open := make(chan struct{})
	next := startControl(t, srv, rdb, namespace, genN1, open)
	if s := next.serving(t); s != grpc_health_v1.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("version N+1 before it caught up: %v, want NOT_SERVING", s)
	}
	scrapeUntil(t, next.metrics, []sample{
		{family: "agentruntime_readmodel_rebuilding", labels: map[string]string{"service": "control", "generation": genN1.ID}, exact: 1},
		{family: "agentruntime_readmodel_rebuild_head", labels: map[string]string{"service": "control"}, exact: 1, atLeast: true},
	})
	if got := active(); got != genN.ID {
		t.Fatalf("active generation while N+1 builds: %s, want N's %s", got, genN.ID)
	}
	if got := old.thread(t); !proto.Equal(got, before) {
		t.Fatalf("version N answers differently while N+1 builds:\n got %v\nwant %v", got, before)
	}

	close(open)
	testkit.Eventually(t, "version N+1 SERVING once caught up", func() bool {
		return next.serving(t) == grpc_health_v1.HealthCheckResponse_SERVING
	})
	if got := next.thread(t); !proto.Equal(got, before) {
		t.Fatalf("version N+1 answers:\n got %v\nwant what N answers %v", got, before)
	}
	if got := active(); got != genN1.ID {
		t.Fatalf("active generation once N+1 caught up: %s, want %s", got, genN1.ID)
	}
	scrapeUntil(t, next.metrics, []sample{
		{family: "agentruntime_readmodel_rebuilding", labels: map[string]string{"generation": genN1.ID}, exact: 0},
		{family: "agentruntime_readmodel_rebuild_folded", labels: map[string]string{"generation": genN1.ID}, exact: 1, atLeast: true},
	})
	// N stays (the previous generation): the old process still answers.
	if keysOf(t, rdb, namespace, genN.ID) == 0 {
		t.Fatal("N's keys were deleted when N+1 became active; the rule keeps the previous generation")
	}
	if got := old.thread(t); !proto.Equal(got, before) {
		t.Fatalf("version N answers differently after N+1 switched:\n got %v\nwant %v", got, before)
	}
	old.stop()

	// Version N+2: N is two behind and goes; N+1 stays.
	third := startControl(t, srv, rdb, namespace, genN2, nil)
	testkit.Eventually(t, "version N+2 SERVING once caught up", func() bool {
		return third.serving(t) == grpc_health_v1.HealthCheckResponse_SERVING
	})
	if got := third.thread(t); !proto.Equal(got, before) {
		t.Fatalf("version N+2 answers:\n got %v\nwant %v", got, before)
	}
	if n := keysOf(t, rdb, namespace, genN.ID); n != 0 {
		t.Fatalf("N's generation keeps %d keys after N+2 became active", n)
	}
	if keysOf(t, rdb, namespace, genN1.ID) == 0 {
		t.Fatal("N+1's keys were deleted: it is the previous generation, kept for a rollback")
	}
	if got := active(); got != genN2.ID {
		t.Fatalf("active generation: %s, want %s", got, genN2.ID)
	}
}

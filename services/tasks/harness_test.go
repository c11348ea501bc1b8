package tasks_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/tasks"
)

// tenantAuth takes the tenant from the "x-tenant" metadata (default
// "t1"): a test stand-in for credentials, so tests can act as two tenants.
type tenantAuth struct{}

func (tenantAuth) Authenticate(ctx context.Context) (auth.Principal, error) {
	tenant := "t1"
	if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get("x-tenant")) > 0 {
		tenant = md.Get("x-tenant")[0]
	}
	return auth.Principal{Tenant: tenant, Subject: "tester", Role: auth.RoleAdmin, Method: auth.MethodAnonymous}, nil
}

func asTenant(ctx context.Context, tenant string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-tenant", tenant)
}

// process is one run of the tasks service: its own NATS server on the
// test's storage dir, its read model, gRPC over bufconn. Stopping it and
// starting another on the same dir is a process restart: the read model
// starts empty and is rebuilt from the log.
type process struct {
	svc    *tasks.Service
	log    *eventlog.Log
	client tasksv1.TasksServiceClient
	stop   func()
}

type env struct {
	t          *testing.T
	dir        string
	redis      redis.UniversalClient
	opts       tasks.Options
	partitions int
	// wrap, when set, wraps each process's read-model store.
	wrap func(projection.Store) projection.Store
}

func newEnv(t *testing.T) *env {
	return &env{t: t, dir: t.TempDir(), opts: tasks.Options{SweepInterval: 50 * time.Millisecond}, partitions: natstest.Partitions(t)}
}

func (e *env) start() *process {
	t := e.t
	ns := natstest.ServerAt(t, e.dir)
	nc := natstest.Connect(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	log, err := eventlog.Open(ctx, nc, eventlog.Config{Partitions: e.partitions})
	if err != nil {
		t.Fatal(err)
	}
	var store projection.Store = projection.NewMemory()
	if e.wrap != nil {
		store = e.wrap(store)
	}
	svc := tasks.NewWithOptions(kit.Deps{Log: log, Store: store, Redis: e.redis}, e.opts)
	srv, err := server.New(server.Config{Authenticator: tenantAuth{}, ShutdownTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	svc.Register(srv.GRPC())
	lis := bufconn.Listen(1 << 20)
	served := make(chan error, 1)
	ran := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	go func() { ran <- svc.Run(ctx) }()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	p := &process{svc: svc, log: log, client: tasksv1.NewTasksServiceClient(conn)}
	p.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-served
		<-ran
		_ = conn.Close()
		nc.Close()
		ns.Shutdown()
	}
	t.Cleanup(p.stop)
	return p
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantCode(t *testing.T, err error, code codes.Code) *status.Status {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Fatalf("want %v, got %v", code, err)
	}
	return st
}

package evidence_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/control"
	"github.com/agentruntime/agentruntime/services/evidence"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/permission"
	"github.com/agentruntime/agentruntime/services/routing"
	"github.com/agentruntime/agentruntime/services/tasks"
)

// system runs the five real services in process, as `agentruntime dev`
// does: one JetStream, each service with its own in-memory store, one gRPC
// server with API-key auth for two tenants.
type system struct {
	log        *eventlog.Log
	control    controlv1.ControlServiceClient
	tasks      tasksv1.TasksServiceClient
	routing    routingv1.RoutingServiceClient
	permission permissionv1.PermissionServiceClient
	evidence   evidencev1.EvidenceServiceClient
}

const (
	keyAcme   = "k-acme-0123456789"
	keyGlobex = "k-globex-0123456789"
)

// One model only: every route is a single candidate.
const registry = `
providers:
  - {id: openai, credential_status: present, regions: [us]}
models:
  - id: gpt-5-4
    provider: openai
    capabilities: [tools, vision]
    context_window: 400000
    prices_usd_per_million: {input: 1.25, output: 10}
`

func startSystem(t testing.TB) *system {
	t.Helper()
	return startSystemWith(t, registry)
}

// startSystemWith starts the system with another model registry.
func startSystemWith(t testing.TB, models string) *system {
	t.Helper()
	path := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(path, []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{Partitions: natstest.Partitions(t)})
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(&auth.Config{APIKeys: []auth.APIKeyConfig{
		{Name: "alice", Tenant: "acme", Role: "admin", Key: keyAcme},
		{Name: "gus", Tenant: "globex", Role: "admin", Key: keyGlobex},
	}})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", Authenticator: authn, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	deps := func() kit.Deps {
		return kit.Deps{Log: log, Store: projection.NewMemory(), Logger: logger, Config: kit.Config{ModelsFile: path}}
	}
	services := []kit.Service{control.New(deps()), tasks.New(deps()), routing.New(deps()), permission.New(deps()), evidence.New(deps())}
	done := make(chan error, len(services)+1)
	runners := 0
	for _, s := range services {
		s.Register(srv.GRPC())
		if r, ok := s.(kit.Runner); ok {
			runners++
			go func() { done <- r.Run(ctx) }()
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		for i := 0; i < runners+1; i++ {
			<-done
		}
		conn.Close()
	})
	return &system{
		log:        log,
		control:    controlv1.NewControlServiceClient(conn),
		tasks:      tasksv1.NewTasksServiceClient(conn),
		routing:    routingv1.NewRoutingServiceClient(conn),
		permission: permissionv1.NewPermissionServiceClient(conn),
		evidence:   evidencev1.NewEvidenceServiceClient(conn),
	}
}

func as(t testing.TB, key string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

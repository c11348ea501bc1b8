// Package alltest starts the five services as `agentruntime dev` does, in
// the test's process: one JetStream log (in process), each service with its
// own in-memory store, behind one gRPC server with the real server kit
// (authentication, validation, interceptors). Tests that cross services
// start it instead of wiring the services by hand.
package alltest

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/held"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/quota"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/all"
	"github.com/agentruntime/agentruntime/services/kit"
)

// Options of a stack; zero values take the defaults.
type Options struct {
	// Models is the model registry (YAML) routing is given; none when empty.
	Models string
	// Partitions of the log; default natstest.Partitions(t) (the
	// AR_TEST_PARTITIONS the test command sets).
	Partitions int
	// Keys are the API keys the server accepts; none: every call is the
	// anonymous admin of tenant "t1".
	Keys []auth.APIKeyConfig
	// Quota holds the callers' appends to per-tenant quotas (pkg/quota);
	// nil: none.
	Quota *quota.Limiter
	// HookAllowHosts, when set, restricts hook targets and webhook URLs
	// to these host[:port] patterns, as the binary does.
	HookAllowHosts []string
	// WebhookKey turns webhooks on (32 bytes); WebhookRetry tunes their
	// retries.
	WebhookKey   []byte
	WebhookRetry kit.WebhookRetry
}

// Stack is the five services running.
type Stack struct {
	Log *eventlog.Log
	// Stores are the services' read models, by service name.
	Stores map[string]*projection.Memory
	// Addr is where the gRPC server listens.
	Addr string

	Control    controlv1.ControlServiceClient
	Tasks      tasksv1.TasksServiceClient
	Routing    routingv1.RoutingServiceClient
	Permission permissionv1.PermissionServiceClient
	Evidence   evidencev1.EvidenceServiceClient
}

// Start runs the stack until the test ends, then stops every service and
// waits for them.
func Start(t testing.TB, o Options) *Stack {
	t.Helper()
	var cfg kit.Config
	if o.Models != "" {
		cfg.ModelsFile = filepath.Join(t.TempDir(), "models.yaml")
		if err := os.WriteFile(cfg.ModelsFile, []byte(o.Models), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if o.Partitions == 0 {
		o.Partitions = natstest.Partitions(t)
	}
	if o.HookAllowHosts != nil {
		cfg.RestrictHookHosts, cfg.HookAllowHosts = true, o.HookAllowHosts
	}
	cfg.WebhookKey, cfg.WebhookRetry = o.WebhookKey, o.WebhookRetry
	ctx, cancel := context.WithCancel(context.Background())
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{Partitions: o.Partitions})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	authn := auth.Anonymous("t1")
	if len(o.Keys) > 0 {
		if authn, err = auth.New(&auth.Config{APIKeys: o.Keys}); err != nil {
			cancel()
			t.Fatal(err)
		}
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", Authenticator: authn, Logger: logger, Quota: o.Quota})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	st := &Stack{Log: log, Stores: map[string]*projection.Memory{}}
	done := make(chan error, len(all.Names)+1)
	waits := 1
	holds := held.NewMemory() // shared, as dev's services share theirs
	for _, name := range all.Names {
		store := projection.NewMemory()
		st.Stores[name] = store
		s, err := all.New(name, kit.Deps{Log: log, Store: store, Logger: logger, Config: cfg, Held: holds})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		s.Register(srv.GRPC())
		// Health says serving, as dev's does: a worker claims only then.
		srv.MarkServing(s.HealthName())
		if r, ok := s.(kit.Runner); ok {
			waits++
			go func() { done <- r.Run(ctx) }()
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	st.Addr = lis.Addr().String()
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := grpc.NewClient(st.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		for range waits {
			<-done
		}
		conn.Close()
	})
	st.Control = controlv1.NewControlServiceClient(conn)
	st.Tasks = tasksv1.NewTasksServiceClient(conn)
	st.Routing = routingv1.NewRoutingServiceClient(conn)
	st.Permission = permissionv1.NewPermissionServiceClient(conn)
	st.Evidence = evidencev1.NewEvidenceServiceClient(conn)
	return st
}

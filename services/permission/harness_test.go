package permission_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/natsembed"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/permission"
)

// tenantAuth takes the tenant from the "tenant" metadata key (tests only),
// so one server serves two tenants.
type tenantAuth struct{}

func (tenantAuth) Authenticate(ctx context.Context) (auth.Principal, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	tenant, subject := "t1", "alice"
	if v := md.Get("tenant"); len(v) > 0 {
		tenant, subject = v[0], "bob"
	}
	return auth.Principal{Tenant: tenant, Subject: subject, Role: auth.RoleAdmin, Method: auth.MethodAPIKey}, nil
}

type harness struct {
	t      *testing.T
	ctx    context.Context
	nats   *natsembed.Server
	log    *eventlog.Log
	client permissionv1.PermissionServiceClient
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return startReplica(t, natstest.Server(t), true)
}

// replica starts another permission process on the same log: its own
// connection, its own writers and its own read model, as a second pod
// would be. Without its projector (projector false) its read model stays
// empty: what it answers comes from its writers and the log alone.
func (h *harness) replica(projector bool) *harness {
	h.t.Helper()
	return startReplicaOf(h.t, h.nats, h.log.Partitions(), projector)
}

func startReplica(t *testing.T, ns *natsembed.Server, projector bool) *harness {
	t.Helper()
	return startReplicaOf(t, ns, natstest.Partitions(t), projector)
}

// startReplicaOf is startReplica on a log of partitions partitions (every
// process on one server must open it with the same count).
func startReplicaOf(t *testing.T, ns *natsembed.Server, partitions int, projector bool) *harness {
	t.Helper()
	var run runner
	if projector {
		run = func(ctx context.Context, svc *permission.Service, _ *eventlog.Log, _ projection.Store) error {
			return svc.Run(ctx)
		}
	}
	return startReplicaRunning(t, ns, partitions, run)
}

// runner runs what a replica runs beside its API on its log and read
// model (svc.Run: the projector and the reactor); nil runs nothing.
type runner func(ctx context.Context, svc *permission.Service, log *eventlog.Log, store projection.Store) error

func startReplicaRunning(t *testing.T, ns *natsembed.Server, partitions int, run runner) *harness {
	t.Helper()
	return startReplicaConfigured(t, ns, partitions, run, kit.Config{})
}

// startReplicaConfigured is startReplicaRunning with the service's
// configuration (the binary's flags).
func startReplicaConfigured(t *testing.T, ns *natsembed.Server, partitions int, run runner, cfg kit.Config) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	log, err := eventlog.Open(ctx, natstest.Connect(t, ns), eventlog.Config{Partitions: partitions})
	require.NoError(t, err)
	store := projection.NewMemory()
	svc := permission.New(kit.Deps{Log: log, Store: store, Config: cfg})
	runCtx, stopRun := context.WithCancel(ctx)
	ran := make(chan error, 1)
	if run != nil {
		go func() { ran <- run(runCtx, svc, log, store) }()
	} else {
		ran <- nil
	}

	srv, err := server.New(server.Config{Authenticator: tenantAuth{}})
	require.NoError(t, err)
	svc.Register(srv.GRPC())
	srv.MarkServing(svc.HealthName())
	lis := bufconn.Listen(1 << 20)
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, lis) }()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		stopServe()
		<-served
		stopRun()
		<-ran
	})
	return &harness{t: t, ctx: ctx, nats: ns, log: log, client: permissionv1.NewPermissionServiceClient(conn)}
}

// as returns a context acting for another tenant.
func (h *harness) as(tenant string) context.Context {
	return metadata.AppendToOutgoingContext(h.ctx, "tenant", tenant)
}

// history returns the session's events in log order.
func (h *harness) history(session string) []*eventsv1.RuntimeEvent {
	h.t.Helper()
	var out []*eventsv1.RuntimeEvent
	_, err := h.log.Read(h.ctx, []string{h.log.Subjects.Session("t1", session)}, eventlog.FromStart, func(r *eventlog.Record) error {
		out = append(out, r.Event)
		return nil
	})
	require.NoError(h.t, err)
	return out
}

// waitEvent follows the session until an event matches, bounded by the
// test's deadline: the reactor's work is asynchronous.
func (h *harness) waitEvent(session string, match func(*eventsv1.RuntimeEvent) bool) *eventsv1.RuntimeEvent {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 15*time.Second)
	defer cancel()
	sub, err := h.log.Subscribe(ctx, []string{h.log.Subjects.Session("t1", session)}, eventlog.FromStart)
	require.NoError(h.t, err)
	defer sub.Stop()
	for {
		rec, err := sub.Next(ctx)
		require.NoError(h.t, err, "no matching event arrived")
		if match(rec.Event) {
			return rec.Event
		}
	}
}

func ofType(evs []*eventsv1.RuntimeEvent, typ string) []*eventsv1.RuntimeEvent {
	var out []*eventsv1.RuntimeEvent
	for _, e := range evs {
		if e.GetType() == typ {
			out = append(out, e)
		}
	}
	return out
}

// hookServer is a host's HookHandler on a real gRPC server on a free port.
type hookServer struct {
	permissionv1.UnimplementedHookHandlerServer
	handle func(context.Context, *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error)
}

func (s *hookServer) HandleHook(ctx context.Context, r *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error) {
	return s.handle(ctx, r)
}

func startHookServer(t testing.TB, handle func(context.Context, *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	permissionv1.RegisterHookHandlerServer(g, &hookServer{handle: handle})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

func sessionScope(session string) *permissionv1.PolicyScope {
	return &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionId: session}
}

// sessionless returns the tenant's events outside any session (the
// tenant and workspace policy levels) in log order.
func (h *harness) sessionless() []*eventsv1.RuntimeEvent {
	h.t.Helper()
	var out []*eventsv1.RuntimeEvent
	_, err := h.log.Read(h.ctx, []string{h.log.Subjects.Session("t1", eventlog.NoSession)}, eventlog.FromStart, func(r *eventlog.Record) error {
		out = append(out, r.Event)
		return nil
	})
	require.NoError(h.t, err)
	return out
}

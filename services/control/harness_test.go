package control_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/natsembed"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
	"github.com/agentruntime/agentruntime/services/control"
	"github.com/agentruntime/agentruntime/services/kit"
)

// harness runs the control service as in a deployment: real JetStream, a
// Redis projection store, the server kit with API-key auth for two tenants,
// over a real loopback listener.
type harness struct {
	t         testing.TB
	memory    bool
	nats      *natsembed.Server
	log       *eventlog.Log
	namespace string
	store     projection.Store
	client    controlv1.ControlServiceClient
	svc       *control.Service
	stop      func()
	// listenAddr is where the service listens.
	listenAddr string
	// leasesInRedis gives the service a Redis client (turn leases in
	// Redis, as in `serve`); otherwise leases are in process (dev).
	leasesInRedis bool
	// maxQueuedTurns is the service's queue bound (kit.Config; 0: the
	// default).
	maxQueuedTurns int
	// a2aPeers are the hosts remote subagents may call (kit.Config).
	a2aPeers []string
	// a2aPeerRetry bounds the attempts to reach a peer (kit.Config).
	a2aPeerRetry kit.A2APeerRetry
	// noProjectors serves the API without running the service's
	// projectors and reactors: the read model stays empty, as one that
	// trails the log would be.
	noProjectors bool
	// claimNap bounds one wait of a ClaimTurn poll (0: the default).
	claimNap time.Duration
	// wrapStore, when set, wraps the store the service is given.
	wrapStore func(projection.Store) projection.Store
	// webhooks turns webhooks on (a test key, short retries);
	// webhookAttemptTimeout bounds one attempt (0: the default).
	webhooks              bool
	webhookAttemptTimeout time.Duration
}

const (
	keyAcme   = "k-acme-0123456789"
	keyGlobex = "k-globex-0123456789"
	// keyAcmeOperator is another caller of acme's, an operator.
	keyAcmeOperator = "k-acme-operator-0123456789"
)

func newHarness(t testing.TB) *harness { return newHarnessOn(t, false) }

// newHarnessWith adjusts the harness before its service starts.
func newHarnessWith(t testing.TB, opt func(*harness)) *harness {
	t.Helper()
	return newHarnessOf(t, 0, opt)
}

// newHarnessOn with memory=true keeps the read model in process (as in
// `agentruntime dev`) instead of Redis.
func newHarnessOn(t testing.TB, memory bool) *harness {
	t.Helper()
	return newHarnessOf(t, 0, func(h *harness) { h.memory = memory })
}

// newHarnessOf runs the harness on a log of partitions streams (0: the
// suite's, testPartitions), adjusted by opt before its service starts.
func newHarnessOf(t testing.TB, partitions int, opt func(*harness)) *harness {
	t.Helper()
	if partitions == 0 {
		partitions = natstest.Partitions(t)
	}
	srv := natstest.Server(t)
	log, err := eventlog.Open(context.Background(), natstest.Connect(t, srv), eventlog.Config{Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, nats: srv, log: log, namespace: "control-test-" + ids.New("ns")}
	opt(h)
	h.start(nil)
	t.Cleanup(func() { h.stop() })
	return h
}

// start runs a service instance; store nil means the Redis store of the
// harness's namespace (its state survives restarts).
func (h *harness) start(store projection.Store) {
	t := h.t
	if store == nil && h.memory {
		store = projection.NewMemory()
	}
	if store == nil {
		store = projection.NewRedis(redistest.Client(t), h.namespace)
	}
	if h.wrapStore != nil {
		store = h.wrapStore(store)
	}
	h.store = store
	authn, err := auth.New(&auth.Config{APIKeys: []auth.APIKeyConfig{
		{Name: "alice", Tenant: "acme", Role: "admin", Key: keyAcme},
		{Name: "gus", Tenant: "globex", Role: "admin", Key: keyGlobex},
		{Name: "olga", Tenant: "acme", Role: "operator", Key: keyAcmeOperator},
	}})
	if err != nil {
		t.Fatal(err)
	}
	deps := kit.Deps{Log: h.log, Store: store, Logger: slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Config: kit.Config{MaxQueuedTurns: h.maxQueuedTurns, A2APeers: h.a2aPeers, A2APeerRetry: h.a2aPeerRetry}}
	if h.leasesInRedis {
		deps.Redis = redistest.Client(t)
	}
	if h.webhooks {
		deps.Config.WebhookKey = testWebhookKey
		deps.Config.WebhookRetry = kit.WebhookRetry{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, AttemptTimeout: h.webhookAttemptTimeout}
	}
	svc := control.New(deps)
	svc.SetWebhookLeaseScope(h.namespace)
	svc.SetPeerLeaseScope(h.namespace)
	if h.claimNap > 0 {
		svc.SetClaimNap(h.claimNap)
	}
	svc.ExpiryInterval = 20 * time.Millisecond
	svc.LeaseSweepInterval = 20 * time.Millisecond
	s, err := server.New(server.Config{Listen: "127.0.0.1:0", Authenticator: authn})
	if err != nil {
		t.Fatal(err)
	}
	svc.Register(s.GRPC())
	h.svc = svc
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served, ran := make(chan error, 1), make(chan error, 1)
	go func() { served <- s.Serve(ctx, lis) }()
	go func() {
		if h.noProjectors {
			ran <- nil
			return
		}
		ran <- svc.Run(ctx)
	}()
	h.listenAddr = lis.Addr().String()
	conn, err := grpc.NewClient(h.listenAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	h.client = controlv1.NewControlServiceClient(conn)
	h.stop = func() {
		cancel()
		<-served
		<-ran
		conn.Close()
	}
}

// heads is every partition's last position: two calls that answer the
// same say nothing was appended in between.
func (h *harness) heads(ctx context.Context) []uint64 {
	h.t.Helper()
	var out []uint64
	for _, v := range h.log.Views() {
		head, err := v.Head(ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, head)
	}
	return out
}

// readLog reads every partition of the log in turn (filters across
// partitions are confined to each): what the log holds, in order within
// each partition.
func (h *harness) readLog(ctx context.Context, filters []string, fn func(*eventlog.Record) error) error {
	for _, v := range h.log.Views() {
		if _, err := v.Read(ctx, filters, eventlog.FromStart, fn); err != nil {
			return err
		}
	}
	return nil
}

// testLogWriter sends the service's warnings and errors to the test log.
type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// restart stops the service and starts a new instance; with fresh=true the
// new instance starts from an empty store and rebuilds it from the log.
func (h *harness) restart(fresh bool) {
	h.stop()
	if fresh {
		h.start(projection.NewMemory())
		return
	}
	h.start(nil)
}

func as(t testing.TB, key string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
}

func acme(t testing.TB) context.Context   { return as(t, keyAcme) }
func globex(t testing.TB) context.Context { return as(t, keyGlobex) }

func text(s string) []*eventsv1.InputPart {
	return []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: s}}}
}

func (h *harness) submit(ctx context.Context, session, thread string, mods ...func(*controlv1.SubmitTurnRequest)) *controlv1.SubmitTurnResponse {
	h.t.Helper()
	req := &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: thread, Input: text("hello")}
	for _, m := range mods {
		m(req)
	}
	resp, err := h.client.SubmitTurn(ctx, req)
	if err != nil {
		h.t.Fatalf("SubmitTurn: %v", err)
	}
	return resp
}

func (h *harness) threadRead(ctx context.Context, session, thread string, minSeq uint64) *controlv1.ThreadRead {
	h.t.Helper()
	resp, err := h.client.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: session, ThreadId: thread, MinSequence: minSeq})
	if err != nil {
		h.t.Fatalf("GetThreadRead: %v", err)
	}
	return resp.Thread
}

func (h *harness) report(ctx context.Context, evs ...*eventsv1.RuntimeEvent) *controlv1.ReportEventsResponse {
	h.t.Helper()
	resp, err := h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: evs})
	if err != nil {
		h.t.Fatalf("ReportEvents: %v", err)
	}
	return resp
}

// reportRun reports as the worker holding claim c.
func (h *harness) reportRun(ctx context.Context, c *controlv1.ClaimTurnResponse, evs ...*eventsv1.RuntimeEvent) *controlv1.ReportEventsResponse {
	h.t.Helper()
	resp, err := h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: evs, RunId: c.GetRunId(), LeaseToken: c.GetLeaseToken()})
	if err != nil {
		h.t.Fatalf("ReportEvents as run %s: %v", c.GetRunId(), err)
	}
	return resp
}

func started(turn string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: "turn.started", TurnId: turn, Payload: &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: "w1"}}}
}

func completed(turn string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: "turn.completed", TurnId: turn, Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: "done", StopReason: "end_turn"}}}
}

func delta(turn, s string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: "model.delta", TurnId: turn, Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: s}}}
}

// subscription collects a SubscribeEvents stream.
type subscription struct {
	t      testing.TB
	stream grpc.ServerStreamingClient[controlv1.SubscribeEventsResponse]
	cancel context.CancelFunc
}

func (h *harness) subscribe(ctx context.Context, req *controlv1.SubscribeEventsRequest) *subscription {
	h.t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	stream, err := h.client.SubscribeEvents(ctx, req)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	h.t.Cleanup(cancel)
	sub := &subscription{t: h.t, stream: stream, cancel: cancel}
	if req.GetStart() == controlv1.StartFrom_START_FROM_NOW || req.GetStart() == controlv1.StartFrom_START_FROM_UNSPECIFIED {
		// The first heartbeat says the subscription is live; only then is
		// "from now" well defined for what the test does next.
		if m, err := stream.Recv(); err != nil || m.GetHeartbeat() == nil {
			h.t.Fatalf("subscription did not start with a heartbeat: %v %v", m, err)
		}
	}
	return sub
}

// next returns the next item that is not a heartbeat.
func (s *subscription) next() *controlv1.SubscribeEventsResponse {
	s.t.Helper()
	for {
		m, err := s.stream.Recv()
		if err != nil {
			s.t.Fatalf("subscription: %v", err)
		}
		if m.GetHeartbeat() == nil {
			return m
		}
	}
}

// until reads events until one of type typ arrives and returns it.
func (s *subscription) until(typ string) *eventsv1.RuntimeEvent {
	s.t.Helper()
	for {
		if ev := s.next().GetEvent(); ev.GetType() == typ {
			return ev
		}
	}
}

func assertCode(t testing.TB, err error, code codes.Code, contains string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("got %v, want %v", err, code)
	}
	if contains != "" && !containsDetail(st, contains) {
		t.Fatalf("error %q (details %v) does not mention %q", st.Message(), st.Details(), contains)
	}
}

func containsDetail(st *status.Status, s string) bool {
	if strings.Contains(st.Message(), s) {
		return true
	}
	for _, d := range st.Details() {
		if strings.Contains(fmt.Sprint(d), s) {
			return true
		}
	}
	return false
}

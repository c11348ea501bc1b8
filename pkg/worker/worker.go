// Package worker is the agentruntime worker SDK: it claims turns from the
// control service under a lease, runs the agent loop (context, tool
// catalog, routing, the provider stream, tool calls under permission,
// repeat) and reports every step as facts through ReportEvents. A worker
// in any language speaks the same gRPC protocol (docs/worker-protocol.md);
// this package is the Go one, and `agentruntime worker` runs it.
package worker

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/worker/confine"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// Config is a worker's setup.
type Config struct {
	// WorkerID names the worker in turn.started and its tool inventory.
	WorkerID string
	// Conn reaches the control, routing and permission services (one
	// address in dev; a gateway or per-service conns otherwise).
	Conn grpc.ClientConnInterface
	// Provider streams model calls.
	Provider provider.Provider
	// DefaultModel is used when routing makes no decision (an empty model
	// registry, routing not served): the timeline records routing's
	// refusal and a run.status saying which model ran instead. Empty: such
	// a turn fails with category "routing".
	DefaultModel string
	// Sandbox confines the tools. Its Isolate is set by New: shell
	// commands run in their own user and network namespace when the host
	// allows it without privileges.
	Sandbox tools.Sandbox
	// DisableNetworkIsolation runs shell commands with the host's network
	// (sandbox.applied then says network enforcement is unavailable, and
	// why).
	DisableNetworkIsolation bool
	// DisableConfinement switches filesystem confinement of shell
	// commands off, as on a host without Landlock: a call the permission
	// service runs sandboxed is then asked of a person instead
	// (sandbox.go, "confinement").
	DisableConfinement bool
	// SessionID limits claims to one session ("" : any of the tenant).
	SessionID string
	// LeaseTTL of a claim (default 15s); heartbeats go every third of it.
	LeaseTTL time.Duration
	// ClaimWait is how long one claim poll waits (default 20s).
	ClaimWait time.Duration
	// MaxTurns is how many turns the worker runs at once (default 4). A
	// turn that delegates (spawn_agent) waits for its subagent's turn,
	// which this worker may be the one to run.
	MaxTurns int
	// Tasks makes the worker also pull task runs from the tasks service
	// (PollTask/HeartbeatTask) and run each as a turn (tasks.go); off by
	// default. TaskKinds limits them to these kinds (empty: any); MaxTasks
	// runs at once (default 1).
	Tasks     bool
	TaskKinds []string
	MaxTasks  int
	// ContextWindow is the context window (tokens) of the model when
	// routing's candidates do not say it (the default model). A transcript
	// above 80 % of the window is compacted; 0: unknown, never compacted.
	ContextWindow int64
	// InfraRetry bounds how long a turn retries a call to routing or
	// permission that fails with Unavailable (a service restarting) before
	// the failure becomes a fact (default 30s).
	InfraRetry time.Duration
	// MaxSteps bounds model calls per turn (default 32).
	MaxSteps int
	// MaxTurnProcesses bounds the background processes one turn has
	// running at once (default DefaultMaxTurnProcesses); MaxProcesses
	// those of all the worker's turns (default DefaultMaxProcesses). A
	// `shell` call with background beyond either fails limit_exceeded and
	// starts nothing.
	MaxTurnProcesses int
	MaxProcesses     int
	// Deltas coalesces a model's streamed text and reasoning into one
	// delta per DeltaBytes or per DeltaInterval after its oldest token,
	// whichever comes first (defaults 4 KiB and 50 ms), and at every
	// step boundary (a tool call, the model's end); the delta then waits
	// at most ReportLinger for its report.
	DeltaBytes    int
	DeltaInterval time.Duration
	// ReportTimeout bounds how long one report is retried (Aborted,
	// Unavailable) before the worker gives the turn up to its lease
	// (default 60s).
	ReportTimeout time.Duration
	// ReportLinger is how long a fact may wait for the facts after it, so
	// that a step's facts (a model reply's request, deltas and completion,
	// its calls' starts and results) travel in one ReportEvents call
	// (default 10ms; negative: every fact is sent as it is said). A fact
	// is sent at once, with what waits, before the worker asks another
	// service anything about the turn (a route, a permission, a sandbox
	// fact), hands the turn back or ends it. ReportBatch (default 64) is
	// how many facts may wait: one more sends them at once.
	ReportLinger time.Duration
	ReportBatch  int
	// ToolSource offers tools besides the built-in ones that come and go
	// while the worker runs: its MCP servers (pkg/worker/mcp). Nil: none.
	ToolSource ToolSource
	// SystemPrompt opens every transcript.
	SystemPrompt string
	// DrainTimeout bounds a graceful stop (default 10s): when Run's
	// context ends, the worker stops claiming and its turns hand
	// themselves back at their next step boundary (park.go); what has not
	// by then is cancelled and handed back from its last completed call.
	DrainTimeout time.Duration
	// OutputBudget is how many bytes of a tool's output the events and the
	// transcript carry inline (default DefaultOutputBudget); above it the
	// output is stored (StoreOutput) and referenced: output.spilled.
	OutputBudget int
	// RedactionRules replace secrets in tool output before it is stored,
	// reported or shown to the model (nil: DefaultRedactionRules; an empty,
	// non-nil slice: none).
	RedactionRules []RedactionRule
	Logger         *slog.Logger
	// TracerProvider records the worker's spans: one per turn, continuing
	// the trace the turn was submitted in, so every call the worker makes
	// for the turn (over a connection with an OpenTelemetry client
	// handler) joins it. Nil records none.
	TracerProvider trace.TracerProvider
}

// Worker runs turns.
type Worker struct {
	cfg        Config
	control    controlv1.ControlServiceClient
	routing    routingv1.RoutingServiceClient
	permission permissionv1.PermissionServiceClient
	tasks      tasksv1.TasksServiceClient
	tools      map[string]tools.Tool
	network    networkIsolation
	confine    confine.Capability
	// processes holds a slot per background process running in any of
	// the worker's turns (Config.MaxProcesses).
	processes chan struct{}
	// draining: Run's context ended; turns hand themselves back.
	draining atomic.Bool
}

// Bounds on background processes (Config.MaxTurnProcesses,
// Config.MaxProcesses): each holds a process group, its pipes and the
// goroutines reporting its output until it ends or its turn does.
const (
	DefaultMaxTurnProcesses = 8
	DefaultMaxProcesses     = 32
)

// New builds a worker with the built-in tools.
func New(cfg Config) *Worker {
	if cfg.WorkerID == "" {
		cfg.WorkerID = ids.New("wkr")
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 15 * time.Second
	}
	if cfg.ClaimWait <= 0 {
		cfg.ClaimWait = 20 * time.Second
	}
	if cfg.MaxTasks <= 0 {
		cfg.MaxTasks = 1
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 4
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 32
	}
	if cfg.MaxTurnProcesses <= 0 {
		cfg.MaxTurnProcesses = DefaultMaxTurnProcesses
	}
	if cfg.MaxProcesses <= 0 {
		cfg.MaxProcesses = DefaultMaxProcesses
	}
	if cfg.DeltaBytes <= 0 {
		cfg.DeltaBytes = 4096
	}
	if cfg.DeltaInterval <= 0 {
		cfg.DeltaInterval = 50 * time.Millisecond
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 10 * time.Second
	}
	if cfg.ReportTimeout <= 0 {
		cfg.ReportTimeout = 60 * time.Second
	}
	if cfg.ReportLinger == 0 {
		cfg.ReportLinger = 10 * time.Millisecond
	}
	if cfg.ReportBatch <= 0 {
		cfg.ReportBatch = 64
	}
	cfg.ReportBatch = min(cfg.ReportBatch, maxReportBatch)
	if cfg.InfraRetry <= 0 {
		cfg.InfraRetry = defaultInfraRetry
	}
	if cfg.OutputBudget <= 0 {
		cfg.OutputBudget = DefaultOutputBudget
	}
	if cfg.RedactionRules == nil {
		cfg.RedactionRules = DefaultRedactionRules
	}
	if cfg.Sandbox.MaxOutput <= 0 {
		// Capture enough for the store to keep what the budget spills.
		cfg.Sandbox.MaxOutput = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = tracenoop.NewTracerProvider()
	}
	if cfg.SystemPrompt == "" {
		cfg.SystemPrompt = "You are an agent working in a workspace through tools. Use them; be brief."
	}
	network := probeNetworkIsolation(cfg.DisableNetworkIsolation)
	cfg.Sandbox.Isolate = network.argv
	cfg.Logger.Info("shell network isolation", "enforced", len(network.argv) > 0, "reason", network.reason)
	fs := probeConfinement(cfg.DisableConfinement)
	cfg.Logger.Info("shell filesystem confinement", "enforced", fs.Available, "landlock_abi", fs.ABI, "reason", fs.Reason)
	return &Worker{
		network: network, confine: fs,
		cfg: cfg, control: controlv1.NewControlServiceClient(cfg.Conn),
		routing: routingv1.NewRoutingServiceClient(cfg.Conn), permission: permissionv1.NewPermissionServiceClient(cfg.Conn),
		tasks:     tasksv1.NewTasksServiceClient(cfg.Conn),
		tools:     builtinTools(),
		processes: make(chan struct{}, cfg.MaxProcesses),
	}
}

// builtinTools are the sandbox's tools, process_wait (waits on the turn's
// background processes), spawn_agent (delegates to a subagent) and
// request_user_input (asks the user, userinput.go).
func builtinTools() map[string]tools.Tool {
	m := tools.Builtins()
	m[processWaitName] = processWait{}
	m[spawnAgentName] = spawnAgent{}
	m[requestUserInputName] = requestUserInput{}
	return m
}

// ID is the worker's id.
func (w *Worker) ID() string { return w.cfg.WorkerID }

// RegisterTools publishes the worker's tool inventory for the tenant.
func (w *Worker) RegisterTools(ctx context.Context) error {
	_, err := w.control.RegisterTools(ctx, w.registerRequest())
	return err
}

// Run registers the tools, then claims and runs up to MaxTurns turns at a
// time until ctx ends (and the running turns have reported their end).
// Before each claim it checks (grpc.health.v1, per service name) that
// control, routing and permission are serving, and claims nothing until
// they are. Transient errors are logged and retried with a backoff.
func (w *Worker) Run(ctx context.Context) error {
	backoff := 200 * time.Millisecond
	for {
		if err := w.RegisterTools(ctx); err == nil {
			break
		} else if ctx.Err() != nil {
			return nil
		} else {
			w.cfg.Logger.WarnContext(ctx, "registering tools", "error", err)
		}
		if !sleep(ctx, backoff) {
			return nil
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	backoff = 200 * time.Millisecond
	slots := make(chan struct{}, w.cfg.MaxTurns)
	// Turns outlive Run's context by up to DrainTimeout: they hand
	// themselves back (drain) rather than fail.
	turnCtx, stopTurns := context.WithCancel(context.WithoutCancel(ctx))
	defer stopTurns()
	var running sync.WaitGroup
	defer w.drain(&running, stopTurns)
	// The drain starts when ctx ends, not when the claim loop has
	// returned: a claim poll in flight may go on for claimGrace, and a
	// turn that reaches a step boundary meanwhile hands itself back.
	stopDraining := context.AfterFunc(ctx, func() { w.draining.Store(true) })
	defer stopDraining()
	running.Go(func() { w.followToolSource(ctx) })
	if w.cfg.Tasks {
		running.Add(1)
		go func() { defer running.Done(); w.runTasks(ctx) }()
	}
	for ctx.Err() == nil {
		// A claim is only asked for with a free slot: a claimed turn starts
		// at once (its lease runs from the claim).
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		// A turn claimed while routing or permission is down would fail
		// for nothing (or worse, run its tools unchecked): claim only when
		// every service a turn needs says it is serving.
		if !w.awaitReady(ctx) {
			return nil
		}
		claim, err := w.claimDraining(ctx)
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				return nil
			}
			w.cfg.Logger.WarnContext(ctx, "claiming a turn", "error", err)
			if !sleep(ctx, backoff) {
				return nil
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 200 * time.Millisecond
		if claim.GetTurn() == nil {
			<-slots
			continue
		}
		running.Add(1)
		go func() {
			defer running.Done()
			defer func() { <-slots }()
			if err := w.RunTurn(turnCtx, claim); err != nil && turnCtx.Err() == nil {
				w.cfg.Logger.WarnContext(ctx, "turn", "turn_id", claim.GetTurn().GetTurnId(), "error", err)
			}
		}()
	}
	return nil
}

// claimGrace is how long a claim poll in flight may go on once the
// worker starts draining: long enough for a grant under way to be
// answered, short enough not to hold a stop.
const claimGrace = 2 * time.Second

// claimDraining is one claim poll that a drain does not cut at once: a
// poll cancelled while control grants it would leave a turn started that
// no worker runs, recorded lost (an attempt spent) when its lease lapses.
// The poll ends claimGrace after ctx does; a turn it still brings is run
// and hands itself back at its first step boundary (drain), claimable at
// once.
func (w *Worker) claimDraining(ctx context.Context) (*controlv1.ClaimTurnResponse, error) {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(claimGrace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-pctx.Done():
		}
	})
	defer stop()
	return w.Claim(pctx, w.cfg.ClaimWait)
}

// drain ends Run: turns hand themselves back at their next step boundary;
// after DrainTimeout the rest are cancelled (and hand back what completed).
func (w *Worker) drain(running *sync.WaitGroup, stopTurns context.CancelFunc) {
	w.draining.Store(true)
	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(w.cfg.DrainTimeout):
	}
	stopTurns()
	<-done
}

// Draining says whether the worker is stopping: it claims nothing more and
// its turns hand themselves back.
func (w *Worker) Draining() bool { return w.draining.Load() }

// Claim asks for one turn, waiting up to wait.
func (w *Worker) Claim(ctx context.Context, wait time.Duration) (*controlv1.ClaimTurnResponse, error) {
	return w.control.ClaimTurn(ctx, &controlv1.ClaimTurnRequest{
		WorkerId: w.cfg.WorkerID, SessionId: w.cfg.SessionID,
		Wait: durationpb.New(wait), LeaseTtl: durationpb.New(w.cfg.LeaseTTL),
	})
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// Why a turn's context ended before the loop did.
var (
	errInterrupted = errors.New("interrupt requested")
	errEnded       = errors.New("the turn ended without this worker")
	errLeaseLost   = errors.New("the lease on the turn was lost")
)

// heartbeat renews the lease every third of its ttl and cancels the turn
// when an interrupt is requested, the turn ended elsewhere or the lease is
// gone.
func (w *Worker) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, turnID, runID, leaseToken string) {
	t := time.NewTicker(w.cfg.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hb, err := w.control.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: turnID, RunId: runID, LeaseToken: leaseToken, LeaseTtl: durationpb.New(w.cfg.LeaseTTL)})
		switch {
		case status.Code(err) == codes.FailedPrecondition:
			cancel(errLeaseLost)
			return
		case err != nil:
			// Transient: the next beat may get through before the lease ends.
			w.cfg.Logger.WarnContext(ctx, "heartbeat", "turn_id", turnID, "error", err)
		case hb.GetInterruptRequested():
			cancel(errInterrupted)
			return
		case terminal(hb.GetStatus()):
			cancel(errEnded)
			return
		}
	}
}

func terminal(s controlv1.TurnStatus) bool {
	switch s {
	case controlv1.TurnStatus_TURN_STATUS_COMPLETED, controlv1.TurnStatus_TURN_STATUS_FAILED, controlv1.TurnStatus_TURN_STATUS_CANCELLED,
		controlv1.TurnStatus_TURN_STATUS_TIMED_OUT, controlv1.TurnStatus_TURN_STATUS_ROLLED_BACK:
		return true
	}
	return false
}

// setPayload sets the envelope's payload oneof from its wrapper (e.g.
// *eventsv1.RuntimeEvent_ToolStarted); the oneof's interface type is
// unexported, so the assignment goes through reflection.
func setPayload(ev *eventsv1.RuntimeEvent, wrapper any) {
	if wrapper == nil {
		return
	}
	reflect.ValueOf(ev).Elem().FieldByName("Payload").Set(reflect.ValueOf(wrapper))
}

// watch follows the turn's thread and cancels the turn as soon as an
// interrupt is requested, the turn ends without this worker (a busy
// policy interrupt), or the runtime records this run lost or another run
// started (this worker was presumed dead: a stall longer than its lease);
// heartbeats would notice too, a third of a lease later.
//
// It also delivers requests for the turn's background processes: stdin
// (process.input) and terminate requests (thread.updated
// process_terminate_requested) recorded by WriteProcessStdin and
// TerminateProcess.
func (w *Worker) watch(ctx context.Context, cancel context.CancelCauseFunc, t *controlv1.Turn, runID string, from uint64, procs *procTable) {
	stream, err := w.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: t.GetSessionId(), ThreadId: t.GetThreadId(), TypePrefixes: []string{"thread.updated", "turn.failed", "turn.completed", "turn.started", "run.status", "process.input"},
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: from,
	})
	if err != nil {
		return // heartbeats still carry the news
	}
	for {
		m, err := stream.Recv()
		if err != nil {
			return
		}
		ev := m.GetEvent()
		switch {
		case ev.GetType() == "process.input" && ev.GetTurnId() == t.GetTurnId():
			procs.input(ev)
		case ev.GetType() == "thread.updated" && ev.GetThreadUpdated().GetChange() == changeProcessTerminate && ev.GetTurnId() == t.GetTurnId():
			procs.terminate(ev.GetProcessId(), ev.GetThreadUpdated().GetReason())
		case ev.GetType() == "thread.updated" && ev.GetThreadUpdated().GetChange() == "interrupt_requested" && ev.GetThreadUpdated().GetTurnId() == t.GetTurnId():
			cancel(errInterrupted)
			return
		case (ev.GetType() == "turn.failed" || ev.GetType() == "turn.completed") && ev.GetTurnId() == t.GetTurnId() && ev.GetRunId() != runID:
			cancel(errEnded)
			return
		case ev.GetType() == "turn.started" && ev.GetTurnId() == t.GetTurnId() && ev.GetRunId() != runID,
			ev.GetType() == "run.status" && ev.GetRunId() == runID && ev.GetRunStatus().GetPhase() == "lost":
			cancel(errLeaseLost)
			return
		}
	}
}

// turnSpan starts the span of a claimed turn as a child of the span its
// submit was appended in (the turn's trace_id and span_id), so the submit,
// the worker's calls and the consumers of the turn's facts are one trace.
func (w *Worker) turnSpan(ctx context.Context, claim *controlv1.ClaimTurnResponse) (context.Context, trace.Span) {
	tu := claim.GetTurn()
	if traceID, err := trace.TraceIDFromHex(tu.GetTraceId()); err == nil {
		if spanID, err := trace.SpanIDFromHex(tu.GetSpanId()); err == nil {
			ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled, Remote: true,
			}))
		}
	}
	return w.cfg.TracerProvider.Tracer("github.com/agentruntime/agentruntime/pkg/worker").Start(ctx, "agentruntime.turn",
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("agentruntime.turn_id", tu.GetTurnId()),
			attribute.String("agentruntime.run_id", claim.GetRunId()),
			attribute.String("agentruntime.session_id", tu.GetSessionId()),
			attribute.String("agentruntime.thread_id", tu.GetThreadId()),
			attribute.String("agentruntime.worker_id", w.cfg.WorkerID),
		))
}

package evidence_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/spec/conformance"
	"github.com/agentruntime/agentruntime/pkg/spec/jsonexport"
)

// Several models, a rate limit and a small daily quota, so routing makes
// real choices, falls back, runs out of candidates and hits its limits.
const familiesRegistry = `
providers:
  - {id: openai, credential_status: present, regions: [us]}
  - {id: anthropic, credential_status: present, regions: [us, eu]}
models:
  - id: gpt-5-4
    provider: openai
    capabilities: [tools, vision, structured_output]
    context_window: 400000
    prices_usd_per_million: {input: 1.25, output: 10}
    latency: standard
  - id: claude-fast
    provider: anthropic
    capabilities: [tools]
    context_window: 200000
    prices_usd_per_million: {input: 0.8, output: 4}
    latency: fast
rate_limits:
  - {id: gpt-rpm, model: gpt-5-4, requests_per_minute: 2}
quotas:
  - {id: daily, tokens_per_day: 1000, low_thresholds: [0.5]}
`

// notProduced are the registered classes no service writes yet, and why
// (docs/adr/0012-classes-without-producer.md).
// The test fails when one of them starts being produced (move it out) or
// when a class outside this list is not produced (cover it).
var notProduced = map[string]string{
	"channel.permission_forwarded": "no service forwards permission requests over a channel yet",
	"channel.permission_returned":  "no service forwards permission requests over a channel yet",
	"channel.peer_task.linked":     "control's peer driver writes it for a remote (A2A) subagent; this scenario calls no peer (cmd/agentruntime TestAParentTurnDelegatesToAnA2APeer does)",
	"channel.peer_task.updated":    "control's peer driver writes it for a remote (A2A) subagent; this scenario calls no peer (cmd/agentruntime TestAParentTurnDelegatesToAnA2APeer does)",
	"runtime.error":                "control writes no runtime.error yet",
	"task.timed_out":               "the tasks supervisor's timers need wall-clock time (services/tasks e2e covers them)",
	"task.lost":                    "the tasks supervisor's lease expiry needs wall-clock time (services/tasks e2e covers it)",
	"session.updated":              "control writes no session.updated yet",
	"snapshot.repaired":            "no snapshot repair exists yet",
}

// Every event the services produce, through their real gRPC APIs, exports
// as JSON valid against the core schema and, in profile mode, the Lime
// profile schema; an event a format cannot represent is listed as skipped
// with its reason, and rendered plus skipped is every event in the log.
func TestEveryProducedEventExportsValid(t *testing.T) {
	s := startSystemWith(t, familiesRegistry)
	turn := runScenario(t, s)
	produceFamilies(t, s, turn)
	recordDefinitions(t, s)
	runTrial(t, s, turn)

	ctx := as(t, keyAcme)
	// The ground truth: every event of the tenant in the log (in every
	// partition).
	type fact struct{ id, typ, session string }
	var all []fact
	bySession := map[string][]fact{}
	for _, view := range s.log.Views() {
		if _, err := view.Read(ctx, []string{view.Subjects.Tenant("acme")}, eventlog.FromStart, func(r *eventlog.Record) error {
			f := fact{r.Event.GetEventId(), r.Event.GetType(), r.Event.GetSessionId()}
			if f.session == "" {
				f.session = eventlog.NoSession
			}
			all = append(all, f)
			bySession[f.session] = append(bySession[f.session], f)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	produced := map[string]int{}
	for _, f := range all {
		produced[f.typ]++
	}
	var missing, unexpected []string
	for _, c := range events.Classes() {
		_, excused := notProduced[c.Type]
		switch {
		case produced[c.Type] == 0 && !excused:
			missing = append(missing, c.Type)
		case produced[c.Type] > 0 && excused:
			unexpected = append(unexpected, c.Type)
		}
	}
	if len(missing) > 0 {
		t.Errorf("classes the services write but the scenario did not produce: %v", missing)
	}
	if len(unexpected) > 0 {
		t.Errorf("classes listed as not produced that were produced: %v", unexpected)
	}
	if bySession[eventlog.NoSession] == nil {
		t.Fatal("no tenant-level facts produced")
	}

	v, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	violations := map[string]string{}
	validated := map[bool]int{}
	for session, facts := range bySession {
		for _, profile := range []bool{false, true} {
			rendered, skipped := exportEverything(t, s, session, profile, head(t, s, session))
			seen := map[string]bool{}
			for _, doc := range rendered {
				var head struct {
					Type      string `json:"type"`
					EventID   string `json:"eventId"`
					SessionID string `json:"sessionId"`
				}
				if err := json.Unmarshal([]byte(doc), &head); err != nil {
					t.Fatal(err)
				}
				seen[head.EventID] = true
				if err := v.Event([]byte(doc), profile); err != nil {
					violations[head.Type+" (profile="+map[bool]string{true: "lime", false: "core"}[profile]+")"] = err.Error()
					continue
				}
				validated[profile]++
			}
			for _, sk := range skipped {
				if seen[sk.GetEventId()] {
					t.Errorf("%s both rendered and skipped", sk.GetEventId())
				}
				seen[sk.GetEventId()] = true
				switch sk.GetReason() {
				case jsonexport.SkipTypeNotInSchema:
					if conformance.SchemaEventType(sk.GetType()) {
						t.Errorf("%s skipped as not in the schema", sk.GetType())
					}
				case jsonexport.SkipNoSession:
					if !profile || session != eventlog.NoSession {
						t.Errorf("%s skipped for no session in session %s (profile %v)", sk.GetType(), session, profile)
					}
				default:
					t.Errorf("%s skipped for %q", sk.GetType(), sk.GetReason())
				}
				if sk.GetDetail() == "" {
					t.Errorf("%s skipped without a detail", sk.GetType())
				}
			}
			for _, f := range facts {
				if !seen[f.id] {
					t.Errorf("%s %s of session %s neither rendered nor skipped (profile %v)", f.typ, f.id, session, profile)
				}
			}
			if len(seen) != len(facts) {
				t.Errorf("session %s: %d exported, %d in the log", session, len(seen), len(facts))
			}
		}
	}
	reportViolations(t, violations)
	if validated[false] < len(all)-produced["subagent.output"] || validated[true] < len(all)-produced["subagent.output"]-len(bySession[eventlog.NoSession]) {
		t.Errorf("validated %d core and %d profile documents of %d events", validated[false], validated[true], len(all))
	}
	// Tenant-level facts are the caller's tenant's only; the request names
	// a session or the tenant's facts, never both or neither.
	g := must[*evidencev1.ExportEventsResponse](t)(s.evidence.ExportEvents(as(t, keyGlobex), &evidencev1.ExportEventsRequest{TenantFacts: true}))
	if len(g.GetEventsJson())+len(g.GetSkipped()) != 0 {
		t.Errorf("globex sees acme's tenant facts: %v", g)
	}
	for _, bad := range []*evidencev1.ExportEventsRequest{{}, {SessionId: "s1", TenantFacts: true}} {
		if _, err := s.evidence.ExportEvents(ctx, bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("ExportEvents(%v): %v", bad, err)
		}
	}
	t.Logf("%d events of %d classes; %d core and %d profile documents valid; %d tenant-level facts", len(all), len(produced), validated[false], validated[true], len(bySession[eventlog.NoSession]))
}

// exportEverything pages through ExportEvents of a session (or the
// tenant's facts for eventlog.NoSession).
func exportEverything(t *testing.T, s *system, session string, profile bool, minSeq uint64) ([]string, []*evidencev1.SkippedEvent) {
	t.Helper()
	req := &evidencev1.ExportEventsRequest{Format: evidencev1.Format_FORMAT_CORE, MinSequence: minSeq, Limit: 50}
	if profile {
		req.Format = evidencev1.Format_FORMAT_LIME_PROFILE
	}
	if session == eventlog.NoSession {
		req.TenantFacts = true
	} else {
		req.SessionId = session
	}
	var docs []string
	var skipped []*evidencev1.SkippedEvent
	for {
		resp := must[*evidencev1.ExportEventsResponse](t)(s.evidence.ExportEvents(as(t, keyAcme), req))
		docs = append(docs, resp.GetEventsJson()...)
		skipped = append(skipped, resp.GetSkipped()...)
		if resp.GetNextSequence() == 0 {
			return docs, skipped
		}
		req.FromSequence = resp.GetNextSequence()
	}
}

type hookHandler struct {
	permissionv1.UnimplementedHookHandlerServer
}

// HandleHook continues every call except the "ctx-reader" hook's tool,
// which it fails so that the read-only hook fails open.
func (hookHandler) HandleHook(_ context.Context, r *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error) {
	if r.GetToolName() == "fs.read" {
		return nil, errors.New("context store unavailable")
	}
	return &permissionv1.HandleHookResponse{Decision: eventsv1.HookOutcome_HOOK_OUTCOME_CONTINUE, Reason: "reviewed"}, nil
}

func startHookHandler(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	permissionv1.RegisterHookHandlerServer(g, hookHandler{})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

// waitFor follows a subject filter of the log until an event matches.
func waitFor(t *testing.T, s *system, filter string, match func(*eventsv1.RuntimeEvent) bool) *eventsv1.RuntimeEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	sub, err := s.log.Subscribe(ctx, []string{filter}, eventlog.FromStart)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	var seen []string
	for {
		rec, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no matching event in %s: %v; the last seen: %v", filter, err, seen[max(0, len(seen)-12):])
		}
		seen = append(seen, rec.Event.GetType()+" "+rec.Event.GetTaskId()+rec.Event.GetActionId())
		if match(rec.Event) {
			return rec.Event
		}
	}
}

func text(s string) []*eventsv1.InputPart {
	return []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: s}}}
}

// produceFamilies drives control, tasks, routing and permission through
// every event family they write, in session s1 (after runScenario) and at
// tenant level.
func produceFamilies(t *testing.T, s *system, firstTurn string) {
	t.Helper()
	ctx := as(t, keyAcme)
	ok := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Control: tool inventories (tenant-wide and the session's), a turn
	// with every kind of step fact, the queue, subagents, channels,
	// interrupt and resume.
	ok(s.control.RegisterTools(ctx, &controlv1.RegisterToolsRequest{WorkerId: "w1", Tools: []*eventsv1.ToolSpec{{Name: "read_file", ReadOnly: true}}}))
	ok(s.control.RegisterTools(ctx, &controlv1.RegisterToolsRequest{SessionId: "s1", WorkerId: "w2", Tools: []*eventsv1.ToolSpec{{Name: "shell", Destructive: true}}}))
	t2 := must[*controlv1.SubmitTurnResponse](t)(s.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th2", Input: text("run the tests")})).GetTurn().GetTurnId()
	q1 := must[*controlv1.SubmitTurnResponse](t)(s.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th2", Input: text("then lint")})).GetTurn().GetTurnId()
	q2 := must[*controlv1.SubmitTurnResponse](t)(s.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th2", Input: text("then ship")})).GetTurn().GetTurnId()
	ok(s.control.PromoteQueuedTurn(ctx, &controlv1.PromoteQueuedTurnRequest{SessionId: "s1", ThreadId: "th2", QueuedTurnId: q2}))
	ok(s.control.RemoveQueuedTurn(ctx, &controlv1.RemoveQueuedTurnRequest{SessionId: "s1", ThreadId: "th2", QueuedTurnId: q1}))

	step := func(typ, stepID, call string) *eventsv1.RuntimeEvent {
		return &eventsv1.RuntimeEvent{Type: typ, TurnId: t2, StepId: stepID, ToolCallId: call}
	}
	out := func(uri string) *eventsv1.OutputFact {
		return &eventsv1.OutputFact{Output: outputRef(uri), Reason: "over the inline cap"}
	}
	comp := &eventsv1.ContextCompaction{Trigger: "auto_token_limit", AffectedTurnIds: []string{t2}, SummaryRef: "object://AGENTRUNTIME_OBJECTS/summary-1", TokensBefore: 180000, TokensAfter: 12000}
	evs := []*eventsv1.RuntimeEvent{
		{Type: "turn.started", Payload: &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: "w2"}}},
		{Type: "run.status", Payload: &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{Phase: "planning", Title: "reading the repo", Metadata: map[string]string{"files": "12"}}}},
		{Type: "context.resolved", Payload: &eventsv1.RuntimeEvent_ContextResolved{ContextResolved: &eventsv1.ContextResolved{Refs: []string{"file://README.md"}, Tokens: 900}}},
		{Type: "history.window.loaded"},
		{Type: "history.reconstructed"},
		{Type: "model.requested", Payload: &eventsv1.RuntimeEvent_ModelRequested{ModelRequested: &eventsv1.ModelRequested{Provider: "openai", Model: "gpt-5-4"}}},
		{Type: "model.failed", Payload: &eventsv1.RuntimeEvent_ModelFailed{ModelFailed: &eventsv1.ModelFailed{Provider: "openai", Model: "gpt-5-4", Category: "overloaded", Retryable: true}}},
		{Type: "model.requested", Payload: &eventsv1.RuntimeEvent_ModelRequested{ModelRequested: &eventsv1.ModelRequested{Provider: "anthropic", Model: "claude-fast"}}},
		{Type: "reasoning.delta", Payload: &eventsv1.RuntimeEvent_ReasoningDelta{ReasoningDelta: &eventsv1.ReasoningDelta{Text: "the tests are in ./..."}}},
		{Type: "reasoning.summary", Payload: &eventsv1.RuntimeEvent_ReasoningSummary{ReasoningSummary: &eventsv1.ReasoningSummary{Text: "run go test"}}},
		func() *eventsv1.RuntimeEvent {
			e := step("tool.catalog.resolved", "step2", "tc_catalog")
			e.Payload = &eventsv1.RuntimeEvent_ToolCatalogResolved{ToolCatalogResolved: &eventsv1.ToolCatalogResolved{ToolNames: []string{"read_file", "shell"}}}
			return e
		}(),
		func() *eventsv1.RuntimeEvent {
			e := step("tool.started", "step2", "tc2")
			e.Payload = &eventsv1.RuntimeEvent_ToolStarted{ToolStarted: &eventsv1.ToolStarted{ToolName: "shell"}}
			return e
		}(),
		func() *eventsv1.RuntimeEvent {
			e := step("tool.progress", "step2", "tc2")
			e.Payload = &eventsv1.RuntimeEvent_ToolProgress{ToolProgress: &eventsv1.ToolProgress{Message: "compiling", Fraction: 0.5}}
			return e
		}(),
		{Type: "process.started", TurnId: t2, ProcessId: "proc1", Payload: &eventsv1.RuntimeEvent_ProcessStarted{ProcessStarted: &eventsv1.ProcessStarted{Command: "go test ./...", Cwd: "/work"}}},
		{Type: "process.input", TurnId: t2, ProcessId: "proc1", Payload: &eventsv1.RuntimeEvent_ProcessInput{ProcessInput: &eventsv1.ProcessInput{Preview: "y"}}},
		{Type: "process.output", TurnId: t2, ProcessId: "proc1", Payload: &eventsv1.RuntimeEvent_ProcessOutput{ProcessOutput: &eventsv1.ProcessOutput{Stream: "stdout", Preview: "ok"}}},
		{Type: "output.spilled", Payload: &eventsv1.RuntimeEvent_OutputSpilled{OutputSpilled: out("object://AGENTRUNTIME_OBJECTS/out-1")}},
		{Type: "output.truncated", Payload: &eventsv1.RuntimeEvent_OutputTruncated{OutputTruncated: out("object://AGENTRUNTIME_OBJECTS/out-1")}},
		{Type: "output.redacted", Payload: &eventsv1.RuntimeEvent_OutputRedacted{OutputRedacted: out("object://AGENTRUNTIME_OBJECTS/out-1")}},
		{Type: "output.expired", Payload: &eventsv1.RuntimeEvent_OutputExpired{OutputExpired: out("object://AGENTRUNTIME_OBJECTS/out-0")}},
		{Type: "process.completed", TurnId: t2, ProcessId: "proc1", Payload: &eventsv1.RuntimeEvent_ProcessCompleted{ProcessCompleted: &eventsv1.ProcessCompleted{ExitCode: 1}}},
		{Type: "process.started", TurnId: t2, ProcessId: "proc2", Payload: &eventsv1.RuntimeEvent_ProcessStarted{ProcessStarted: &eventsv1.ProcessStarted{Command: "make", Pty: true}}},
		{Type: "process.failed", TurnId: t2, ProcessId: "proc2", Payload: &eventsv1.RuntimeEvent_ProcessFailed{ProcessFailed: &eventsv1.ProcessFailed{Category: "spawn", Message: "make: not found"}}},
		{Type: "process.started", TurnId: t2, ProcessId: "proc3", Payload: &eventsv1.RuntimeEvent_ProcessStarted{ProcessStarted: &eventsv1.ProcessStarted{Command: "sleep 600"}}},
		{Type: "process.terminated", TurnId: t2, ProcessId: "proc3", Payload: &eventsv1.RuntimeEvent_ProcessTerminated{ProcessTerminated: &eventsv1.ProcessTerminated{Reason: "timeout", Signal: "SIGKILL"}}},
		func() *eventsv1.RuntimeEvent {
			e := step("tool.failed", "step2", "tc2")
			e.Payload = &eventsv1.RuntimeEvent_ToolFailed{ToolFailed: &eventsv1.ToolFailed{Category: "exit_code", Message: "tests failed", Retryable: true}}
			return e
		}(),
		{Type: "artifact.changed", ArtifactId: "art1", Payload: &eventsv1.RuntimeEvent_ArtifactChanged{ArtifactChanged: &eventsv1.ArtifactChanged{ArtifactId: "art1", ReadRef: "object://AGENTRUNTIME_OBJECTS/art1", VersionId: "v1"}}},
		{Type: "context.compaction.started", Payload: &eventsv1.RuntimeEvent_ContextCompactionStarted{ContextCompactionStarted: comp}},
		{Type: "context.compaction.failed", Payload: &eventsv1.RuntimeEvent_ContextCompactionFailed{ContextCompactionFailed: comp}},
		{Type: "context.compaction.started", Payload: &eventsv1.RuntimeEvent_ContextCompactionStarted{ContextCompactionStarted: comp}},
		{Type: "context.compaction.completed", Payload: &eventsv1.RuntimeEvent_ContextCompactionCompleted{ContextCompactionCompleted: comp}},
		{Type: "history.rollback.started", Payload: &eventsv1.RuntimeEvent_HistoryRollbackStarted{HistoryRollbackStarted: &eventsv1.HistoryRollback{ToTurnId: t2, Reason: "bad edit"}}},
		{Type: "history.rollback.completed", Payload: &eventsv1.RuntimeEvent_HistoryRollbackCompleted{HistoryRollbackCompleted: &eventsv1.HistoryRollback{ToTurnId: t2, Reason: "bad edit"}}},
		{Type: "model.completed", Payload: &eventsv1.RuntimeEvent_ModelCompleted{ModelCompleted: &eventsv1.ModelCompleted{Provider: "anthropic", Model: "claude-fast",
			Usage: &eventsv1.ModelUsage{InputTokens: 300, OutputTokens: 40}}}},
	}
	for _, e := range evs {
		if e.TurnId == "" {
			e.TurnId = t2
		}
	}
	ok(s.control.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: evs}))

	// Subagents: one fails after a status and an output, one completes;
	// both are closed.
	for _, sub := range []string{"sub_a", "sub_b"} {
		ok(s.control.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: "s1", ParentThreadId: "th2", ParentTurnId: t2, SubagentId: sub, Role: "researcher", Objective: "look", Input: text("look at the logs")}))
	}
	ok(s.control.SendSubagentInput(ctx, &controlv1.SendSubagentInputRequest{SessionId: "s1", SubagentId: "sub_a", Input: text("also the traces")}))
	sub := func(typ, id string, p *eventsv1.SubagentStatus) *eventsv1.RuntimeEvent {
		e := &eventsv1.RuntimeEvent{Type: typ, TurnId: t2, SubagentId: id}
		switch typ {
		case "subagent.status":
			e.Payload = &eventsv1.RuntimeEvent_SubagentStatus{SubagentStatus: p}
		case "subagent.output":
			e.Payload = &eventsv1.RuntimeEvent_SubagentOutput{SubagentOutput: p}
		case "subagent.failed":
			e.Payload = &eventsv1.RuntimeEvent_SubagentFailed{SubagentFailed: p}
		case "subagent.completed":
			e.Payload = &eventsv1.RuntimeEvent_SubagentCompleted{SubagentCompleted: p}
		}
		return e
	}
	ok(s.control.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{
		sub("subagent.status", "sub_a", &eventsv1.SubagentStatus{Status: "running", Summary: "reading"}),
		sub("subagent.output", "sub_a", &eventsv1.SubagentStatus{Summary: "partial findings"}),
		sub("subagent.failed", "sub_a", &eventsv1.SubagentStatus{Status: "failed", Reason: "context overflow"}),
		sub("subagent.completed", "sub_b", &eventsv1.SubagentStatus{Status: "completed", Summary: "found it"}),
	}}))
	for _, id := range []string{"sub_a", "sub_b"} {
		ok(s.control.CloseSubagent(ctx, &controlv1.CloseSubagentRequest{SessionId: "s1", SubagentId: id}))
	}

	// Channels: connect, ack, a stream that ends (disconnected), resume.
	ok(s.control.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{ChannelId: "chan_slack", SessionId: "s1", Peer: "slack:C123"}))
	ok(s.control.AckEvents(ctx, &controlv1.AckEventsRequest{ChannelId: "chan_slack", SessionId: "s1", Sequence: 1}))
	subCtx, cancelSub := context.WithCancel(ctx)
	stream, err := s.control.SubscribeEvents(subCtx, &controlv1.SubscribeEventsRequest{SessionId: "s1", ChannelId: "chan_slack",
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	cancelSub()
	waitFor(t, s, s.log.Subjects.Session("acme", "s1"), func(e *eventsv1.RuntimeEvent) bool { return e.GetType() == "channel.disconnected" })
	ok(s.control.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{ChannelId: "chan_slack", SessionId: "s1"}))

	// Interrupt the running turn (thread.updated, the turn ends, the
	// queue advances) and resume the thread.
	ok(s.control.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "th2", TurnId: t2, Reason: "user stop"}))
	ok(s.control.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{Type: "turn.failed", TurnId: t2,
		Payload: &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: &eventsv1.TurnFailed{Category: "interrupted", Message: "stopped by the user"}}}}}))
	ok(s.control.ResumeThread(ctx, &controlv1.ResumeThreadRequest{SessionId: "s1", ThreadId: "th2"}))

	// Permission: session sandbox and mode, a tenant rule (tenant-level
	// policy.changed), an evaluation inside the sandbox, one escaping it,
	// a reported violation, hooks that continue and fail open, and an
	// approval answered through control.
	target := startHookHandler(t)
	sessionScope := &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionId: "s1"}
	ok(s.permission.SetSandboxProfile(ctx, &permissionv1.SetSandboxProfileRequest{Scope: sessionScope, Profile: &eventsv1.SandboxProfile{
		Mode: eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE, Cwd: "/work", WriteRoots: []string{"/work"}, Network: eventsv1.NetworkMode_NETWORK_MODE_NONE,
		ProcessLimits: &eventsv1.ProcessLimits{MaxProcesses: 64, WallTime: durationpb.New(time.Minute)}}}))
	mode := must[*permissionv1.SetPermissionModeResponse](t)(s.permission.SetPermissionMode(ctx, &permissionv1.SetPermissionModeRequest{Scope: sessionScope,
		Mode: eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED, Interactive: true}))
	ok(s.permission.PutRules(ctx, &permissionv1.PutRulesRequest{Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT},
		Rules: []*eventsv1.PermissionRule{{RuleId: "no-force-push", Effect: eventsv1.RuleEffect_RULE_EFFECT_DENY, Tool: "shell", Commands: []string{"git push"}}}}))
	var last uint64
	for _, hk := range []*eventsv1.Hook{
		{HookId: "reviewer", Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, ToolMatcher: "fs.write", Handler: &eventsv1.Hook_GrpcTarget{GrpcTarget: target}},
		{HookId: "ctx-reader", Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, ToolMatcher: "fs.read", Risk: eventsv1.HookRisk_HOOK_RISK_READ_ONLY,
			Handler: &eventsv1.Hook_GrpcTarget{GrpcTarget: target}},
	} {
		last = must[*permissionv1.RegisterHookResponse](t)(s.permission.RegisterHook(ctx, &permissionv1.RegisterHookRequest{Hook: hk})).GetWrite().GetSequence()
	}
	eval := func(name string, access eventsv1.Access, paths []string, command string) *permissionv1.EvaluatePermissionResponse {
		t.Helper()
		return must[*permissionv1.EvaluatePermissionResponse](t)(s.permission.EvaluatePermission(ctx, &permissionv1.EvaluatePermissionRequest{
			SessionId: "s1", ThreadId: "th1", TurnId: firstTurn, StepId: "step9", ToolCallId: "tc9", Target: eventsv1.TargetKind_TARGET_KIND_TOOL,
			Name: name, Access: access, Paths: paths, Command: command, Cwd: "/work", MinSequence: max(last, mode.GetWrite().GetSequence()),
			ApprovalTimeout: durationpb.New(time.Minute)}))
	}
	eval("fs.write", eventsv1.Access_ACCESS_WRITE, []string{"src/main.go"}, "")
	eval("fs.write", eventsv1.Access_ACCESS_WRITE, []string{"../etc/passwd"}, "")
	eval("fs.read", eventsv1.Access_ACCESS_READ, []string{"/work/a"}, "")
	ok(s.permission.ReportSandboxViolation(ctx, &permissionv1.ReportSandboxViolationRequest{SessionId: "s1", ThreadId: "th1", TurnId: firstTurn,
		ProcessId: "proc_1", Kind: eventsv1.ViolationKind_VIOLATION_KIND_NETWORK, Target: "pypi.org", Reason: "network none", Blocked: true}))
	asked := eval("shell", eventsv1.Access_ACCESS_EXECUTE, nil, "npm install left-pad").GetEvaluation()
	if asked.GetDecision() != eventsv1.Decision_DECISION_ASK {
		t.Fatalf("untrusted shell command: %v", asked)
	}
	action := asked.GetApprovalActionId()
	sessionFacts := s.log.Subjects.Session("acme", "s1")
	waitFor(t, s, sessionFacts, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "action.required" && e.GetActionId() == action
	})
	ok(s.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: action, Decision: "allow_once"}))
	waitFor(t, s, sessionFacts, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "permission.resolved" && e.GetActionId() == action
	})
	waitFor(t, s, sessionFacts, func(e *eventsv1.RuntimeEvent) bool { return e.GetType() == "runtime.warning" })

	// Routing: a profile, candidates, a decision with a fallback walked to
	// its end, a single-candidate route, costs that cross the quota's low
	// mark and block it, and a rate limit.
	scope := func(turn string) *routingv1.TurnScope {
		return &routingv1.TurnScope{SessionId: "s1", ThreadId: "th2", TurnId: turn, TaskId: "task_r", RunId: "run_r"}
	}
	tools := &eventsv1.TaskProfile{Kind: "coding", RequiredCapabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS},
		FallbackPolicy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE}
	ok(s.routing.ResolveTaskProfile(ctx, &routingv1.ResolveTaskProfileRequest{Scope: &routingv1.ProfileScope{SessionId: "s1", ThreadId: "th2", TurnId: q2, TaskId: "task_r"}, Kind: "coding"}))
	ok(s.routing.ResolveTaskProfile(ctx, &routingv1.ResolveTaskProfileRequest{Scope: &routingv1.ProfileScope{TaskId: "task_loose"}, Kind: "chat"}))
	ok(s.routing.ResolveCandidates(ctx, &routingv1.ResolveCandidatesRequest{Scope: scope(q2), Route: &routingv1.RouteRequest{Profile: tools}}))
	d := must[*routingv1.DecideRouteResponse](t)(s.routing.DecideRoute(ctx, &routingv1.DecideRouteRequest{Scope: scope(q2), Route: &routingv1.RouteRequest{Profile: tools, RequestedModelId: "gpt-5-4"}}))
	failed := d.GetDecision().GetSelectedModelId()
	for range 3 {
		fb := must[*routingv1.ApplyFallbackResponse](t)(s.routing.ApplyFallback(ctx, &routingv1.ApplyFallbackRequest{Scope: scope(q2), FailedModelId: failed,
			FailureCategory: eventsv1.FailureCategory_FAILURE_CATEGORY_OVERLOADED}))
		if fb.GetNotPossible() != nil {
			break
		}
		failed = fb.GetFallback().GetDecision().GetSelectedModelId()
	}
	vision := &eventsv1.TaskProfile{Kind: "vision", RequiredCapabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_VISION}}
	ok(s.routing.DecideRoute(ctx, &routingv1.DecideRouteRequest{Scope: scope("turn_vision"), Route: &routingv1.RouteRequest{Profile: vision}}))
	ok(s.routing.EstimateCost(ctx, &routingv1.EstimateCostRequest{Scope: scope(q2), ModelId: "claude-fast", Usage: &routingv1.Usage{InputTokens: 500}}))
	// Two requests a minute: the third hits the rate limit.
	for range 3 {
		_, _ = s.routing.ConsumeLimits(ctx, &routingv1.ConsumeLimitsRequest{Scope: scope(q2), ModelId: "gpt-5-4"})
	}
	ok(s.routing.RecordCost(ctx, &routingv1.RecordCostRequest{Scope: scope(q2), UsageId: "u1", ModelId: "claude-fast", Usage: &routingv1.Usage{InputTokens: 500, OutputTokens: 100}}))
	ok(s.routing.RecordCost(ctx, &routingv1.RecordCostRequest{Scope: scope(q2), UsageId: "u2", ModelId: "claude-fast", Usage: &routingv1.Usage{InputTokens: 500}}))

	// Tasks: a task through progress, update, pause, resume, a failed and
	// a retried attempt, completion and archive; one blocked by it; one
	// cancelled; one delegated; one of no session (tenant-level).
	worker := &tasksv1.WorkerRef{WorkerId: "w1", Kind: "agent", ThreadId: "th2"}
	mk := func(id string, retry *tasksv1.RetryPolicy, blockedBy ...string) {
		ok(s.tasks.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: id, SessionId: "s1", ThreadId: "th2", TurnId: q2, BlockedBy: blockedBy,
			Spec: &tasksv1.TaskSpec{Title: id, Objective: "do " + id, RetryPolicy: retry}}))
	}
	mk("tk_main", nil)
	mk("tk_after", nil, "tk_main")
	mk("tk_cancel", &tasksv1.RetryPolicy{MaxAttempts: 3})
	ok(s.tasks.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "tk_draft", SessionId: "s1", Draft: true, Spec: &tasksv1.TaskSpec{Title: "draft"}}))
	ok(s.tasks.UpdateTask(ctx, &tasksv1.UpdateTaskRequest{TaskId: "tk_draft", Submit: true}))
	ok(s.tasks.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "tk_loose", Spec: &tasksv1.TaskSpec{Title: "no session"}}))
	run := must[*tasksv1.StartTaskResponse](t)(s.tasks.StartTask(ctx, &tasksv1.StartTaskRequest{TaskId: "tk_main", Worker: worker})).GetRunId()
	ok(s.tasks.AppendTaskProgress(ctx, &tasksv1.AppendTaskProgressRequest{TaskId: "tk_main", RunId: run, Progress: &tasksv1.Progress{Phase: "working", Percent: 30}}))
	ok(s.tasks.AppendTaskProgress(ctx, &tasksv1.AppendTaskProgressRequest{TaskId: "tk_main", RunId: run, RunState: tasksv1.TaskStatus_TASK_STATUS_WAITING_INPUT, Reason: "needs a token"}))
	ok(s.tasks.AppendTaskProgress(ctx, &tasksv1.AppendTaskProgressRequest{TaskId: "tk_main", RunId: run, RunState: tasksv1.TaskStatus_TASK_STATUS_RUNNING, Reason: "got it"}))
	ok(s.tasks.UpdateTask(ctx, &tasksv1.UpdateTaskRequest{TaskId: "tk_main", Spec: &tasksv1.TaskSpec{Title: "main, renamed"}, UpdateFields: []string{"title"}}))
	ok(s.tasks.PauseTask(ctx, &tasksv1.PauseTaskRequest{TaskId: "tk_main", Reason: "waiting for review"}))
	ok(s.tasks.ResumeTask(ctx, &tasksv1.ResumeTaskRequest{TaskId: "tk_main", Reason: "reviewed"}))
	ok(s.tasks.FailTask(ctx, &tasksv1.FailTaskRequest{TaskId: "tk_main", RunId: run, Error: &tasksv1.TaskError{Category: "transient", Message: "flaky", Retryable: true}}))
	run = must[*tasksv1.RetryTaskResponse](t)(s.tasks.RetryTask(ctx, &tasksv1.RetryTaskRequest{TaskId: "tk_main", Reason: "flake", Worker: worker})).GetRunId()
	ok(s.tasks.CompleteTask(ctx, &tasksv1.CompleteTaskRequest{TaskId: "tk_main", RunId: run, Summary: "done"}))
	ok(s.tasks.ArchiveTask(ctx, &tasksv1.ArchiveTaskRequest{TaskId: "tk_main", Reason: "shipped"}))
	// A failure under a retry policy schedules a retry; cancel it.
	cr := must[*tasksv1.StartTaskResponse](t)(s.tasks.StartTask(ctx, &tasksv1.StartTaskRequest{TaskId: "tk_cancel", Worker: worker})).GetRunId()
	ok(s.tasks.FailTask(ctx, &tasksv1.FailTaskRequest{TaskId: "tk_cancel", RunId: cr, Error: &tasksv1.TaskError{Category: "transient", Message: "flaky", Retryable: true}}))
	ok(s.tasks.CancelTask(ctx, &tasksv1.CancelTaskRequest{TaskId: "tk_cancel", Reason: "not needed"}))
	ok(s.tasks.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "tk_child", SessionId: "s1", ParentTaskId: "tk_after", Spec: &tasksv1.TaskSpec{Title: "child"}}))
	waitFor(t, s, sessionFacts, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "task.delegated" && e.GetTaskId() == "tk_after"
	})
	waitFor(t, s, sessionFacts, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "task.dependency.updated" && e.GetTaskId() == "tk_after"
	})

	// Jobs: one with a completed and a failed item, one cancelled, one of
	// no session (its item runs on no thread: a thread belongs to a session).
	job := must[*tasksv1.CreateJobResponse](t)(s.tasks.CreateJob(ctx, &tasksv1.CreateJobRequest{JobId: "job1", SessionId: "s1", Spec: &tasksv1.JobSpec{Title: "label rows"},
		Items: []*tasksv1.JobItemInput{{ItemId: "a", InputRef: "row:1"}, {ItemId: "b", InputRef: "row:2"}}})).GetJob()
	runs := map[string]string{}
	for _, id := range []string{"a", "b"} {
		runs[id] = must[*tasksv1.StartJobItemResponse](t)(s.tasks.StartJobItem(ctx, &tasksv1.StartJobItemRequest{JobId: job.GetJobId(), ItemId: id, ThreadId: "th_" + id})).GetRunId()
	}
	ok(s.tasks.CompleteJobItem(ctx, &tasksv1.CompleteJobItemRequest{JobId: job.GetJobId(), ItemId: "a", RunId: runs["a"], OutputRef: outputRef("object://AGENTRUNTIME_OBJECTS/a")}))
	ok(s.tasks.FailJobItem(ctx, &tasksv1.FailJobItemRequest{JobId: job.GetJobId(), ItemId: "b", RunId: runs["b"], Error: &tasksv1.TaskError{Category: "transient", Message: "rate limited"}}))
	ok(s.tasks.CreateJob(ctx, &tasksv1.CreateJobRequest{JobId: "job2", SessionId: "s1", Spec: &tasksv1.JobSpec{Title: "abandoned"}, Items: []*tasksv1.JobItemInput{{ItemId: "x"}}}))
	ok(s.tasks.CancelJob(ctx, &tasksv1.CancelJobRequest{JobId: "job2", Reason: "abandoned"}))
	job3 := must[*tasksv1.CreateJobResponse](t)(s.tasks.CreateJob(ctx, &tasksv1.CreateJobRequest{JobId: "job3", Spec: &tasksv1.JobSpec{Title: "tenant job"}, Items: []*tasksv1.JobItemInput{{ItemId: "y"}}})).GetJob()
	r3 := must[*tasksv1.StartJobItemResponse](t)(s.tasks.StartJobItem(ctx, &tasksv1.StartJobItemRequest{JobId: job3.GetJobId(), ItemId: "y"})).GetRunId()
	ok(s.tasks.CompleteJobItem(ctx, &tasksv1.CompleteJobItemRequest{JobId: job3.GetJobId(), ItemId: "y", RunId: r3, OutputRef: outputRef("object://AGENTRUNTIME_OBJECTS/y")}))

	// Evidence of the whole session.
	ok(s.evidence.ExportEvidence(ctx, &evidencev1.ExportEvidenceRequest{Scope: &evidencev1.Scope{SessionId: "s1", Kind: evidencev1.ScopeKind_SCOPE_KIND_SESSION}, MinSequence: head(t, s, "s1")}))
}

// runTrial runs a benchmark trial on the first turn: started, rewarded,
// failed, exported and compared with itself as the baseline.
func runTrial(t *testing.T, s *system, turn string) {
	t.Helper()
	ctx := as(t, keyAcme)
	for _, tr := range []struct{ id, role, failure string }{{"trial-b", "baseline", ""}, {"trial-c", "candidate", "timeout"}} {
		must[*evidencev1.StartBenchmarkTrialResponse](t)(s.evidence.StartBenchmarkTrial(ctx, &evidencev1.StartBenchmarkTrialRequest{
			SessionId: "s1", ThreadId: "th1", TurnId: turn, TaskId: "task1", RunId: "run1", Benchmark: spine(tr.id, tr.role), Attempt: 1, TimeoutSec: 300}))
		must[*evidencev1.RecordBenchmarkRewardResponse](t)(s.evidence.RecordBenchmarkReward(ctx, &evidencev1.RecordBenchmarkRewardRequest{SessionId: "s1", TrialId: tr.id, Value: 0.5,
			DetailsRef: "/logs/verifier/reward-details.json", Criteria: []string{"trajectory-present"}}))
		must[*evidencev1.EndBenchmarkTrialResponse](t)(s.evidence.EndBenchmarkTrial(ctx, &evidencev1.EndBenchmarkTrialRequest{SessionId: "s1", TrialId: tr.id, FailureCategory: tr.failure, TimedOut: tr.failure != ""}))
	}
	must[*evidencev1.ExportBenchmarkTrialResponse](t)(s.evidence.ExportBenchmarkTrial(ctx, &evidencev1.ExportBenchmarkTrialRequest{SessionId: "s1", TrialId: "trial-c"}))
	must[*evidencev1.CompareBenchmarkRunsResponse](t)(s.evidence.CompareBenchmarkRuns(ctx, &evidencev1.CompareBenchmarkRunsRequest{SessionId: "s1", ComparisonId: "cmp-fam",
		BaselineConfigurationId: "baseline-cfg", CandidateConfigurationId: "candidate-cfg",
		Baseline: []*evidencev1.TrialRef{{SessionId: "s1", TrialId: "trial-b"}}, Candidate: []*evidencev1.TrialRef{{SessionId: "s1", TrialId: "trial-c"}}}))
}

func outputRef(uri string) *commonv1.OutputRef { return &commonv1.OutputRef{Uri: uri, SizeBytes: 4096} }

package evidence_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/enums"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/spec/conformance"
)

// runScenario drives the real services through a turn with a model call, a
// tool call, an approval, a single-candidate route and a failed task
// attempt, and returns the turn id and the log head.
func runScenario(t *testing.T, s *system) (turn string) {
	t.Helper()
	ctx := as(t, keyAcme)
	sub := must[*controlv1.SubmitTurnResponse](t)(s.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1",
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "update the README"}}}}))
	turn = sub.GetTurn().GetTurnId()
	rep := func(evs ...*eventsv1.RuntimeEvent) {
		t.Helper()
		for _, ev := range evs {
			ev.TurnId = turn
		}
		must[*controlv1.ReportEventsResponse](t)(s.control.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: evs}))
	}
	must[*routingv1.DecideRouteResponse](t)(s.routing.DecideRoute(ctx, &routingv1.DecideRouteRequest{
		Scope: &routingv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: turn, TaskId: "task1", RunId: "run1"},
		Route: &routingv1.RouteRequest{Profile: &eventsv1.TaskProfile{Kind: "coding"}, EstimatedInputTokens: 1000, EstimatedOutputTokens: 100}}))
	rep(
		&eventsv1.RuntimeEvent{Type: "turn.started", Payload: &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: "w1"}}},
		&eventsv1.RuntimeEvent{Type: "model.requested", Payload: &eventsv1.RuntimeEvent_ModelRequested{ModelRequested: &eventsv1.ModelRequested{Provider: "openai", Model: "gpt-5-4"}}},
		&eventsv1.RuntimeEvent{Type: "model.delta", Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: "I will write the file."}}},
		&eventsv1.RuntimeEvent{Type: "tool.started", StepId: "step1", ToolCallId: "tc1", Payload: &eventsv1.RuntimeEvent_ToolStarted{ToolStarted: &eventsv1.ToolStarted{ToolName: "write_file"}}},
		&eventsv1.RuntimeEvent{Type: "tool.args", StepId: "step1", ToolCallId: "tc1", Payload: &eventsv1.RuntimeEvent_ToolArgs{ToolArgs: &eventsv1.ToolArgs{SafeArgsJson: `{"path":"README.md"}`}}},
	)
	must[*controlv1.RequestActionResponse](t)(s.control.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: turn,
		ActionId: "act_write", ActionType: "tool_permission", Prompt: "Allow write_file to update README.md?", Decisions: []string{"allow_once", "deny"},
		Context: map[string]string{"name": "write_file", "target": "TARGET_KIND_TOOL", "path": "README.md"}}))
	must[*controlv1.RespondActionResponse](t)(s.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act_write", Decision: "allow_once"}))
	rep(
		&eventsv1.RuntimeEvent{Type: "tool.result", StepId: "step1", ToolCallId: "tc1", Payload: &eventsv1.RuntimeEvent_ToolResult{ToolResult: &eventsv1.ToolResult{Preview: "wrote 120 bytes"}}},
		&eventsv1.RuntimeEvent{Type: "model.completed", Payload: &eventsv1.RuntimeEvent_ModelCompleted{ModelCompleted: &eventsv1.ModelCompleted{Provider: "openai", Model: "gpt-5-4",
			Usage: &eventsv1.ModelUsage{InputTokens: 1200, OutputTokens: 80}}}},
	)
	task := must[*tasksv1.CreateTaskResponse](t)(s.tasks.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "task1", SessionId: "s1", ThreadId: "th1", TurnId: turn,
		Spec: &tasksv1.TaskSpec{Title: "readme", Objective: "update the README"}})).GetTask()
	run := must[*tasksv1.StartTaskResponse](t)(s.tasks.StartTask(ctx, &tasksv1.StartTaskRequest{TaskId: task.GetTaskId(), RunId: "run1",
		Worker: &tasksv1.WorkerRef{WorkerId: "w1", Kind: "agent", ThreadId: "th1"}})).GetRunId()
	must[*tasksv1.FailTaskResponse](t)(s.tasks.FailTask(ctx, &tasksv1.FailTaskRequest{TaskId: task.GetTaskId(), RunId: run,
		Error: &tasksv1.TaskError{Category: "tool_failed", Code: "E_TOOL", Message: "the linter failed", Retryable: true}}))
	rep(&eventsv1.RuntimeEvent{Type: "turn.completed", Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: "done", StopReason: "end_turn"}}})
	return turn
}

// head is the last position of the partition holding acme's session.
func head(t *testing.T, s *system, session string) uint64 {
	h, err := s.log.Of("acme", session).Head(as(t, keyAcme))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func exportAll(t *testing.T, s *system, session string, format evidencev1.Format) []string {
	t.Helper()
	var out []string
	req := &evidencev1.ExportEventsRequest{SessionId: session, Format: format, MinSequence: head(t, s, "s1"), Limit: 7}
	for {
		resp := must[*evidencev1.ExportEventsResponse](t)(s.evidence.ExportEvents(as(t, keyAcme), req))
		out = append(out, resp.GetEventsJson()...)
		if resp.GetNextSequence() == 0 {
			return out
		}
		req.FromSequence = resp.GetNextSequence()
	}
}

// Spec scenarios "Evidence export" and "Lime profile fixture validation":
// from a real run, every exported event validates against the core schema
// and, in profile mode, the Lime profile schema; the runtime produces one
// valid event or snapshot of each fixture kind.
func TestEvidenceExportAndProfileConformance(t *testing.T) {
	s := startSystem(t)
	turn := runScenario(t, s)
	ctx := as(t, keyAcme)

	scope := &evidencev1.Scope{SessionId: "s1", Kind: evidencev1.ScopeKind_SCOPE_KIND_TURN, Id: turn}
	first := must[*evidencev1.ExportEvidenceResponse](t)(s.evidence.ExportEvidence(ctx, &evidencev1.ExportEvidenceRequest{Scope: scope, MinSequence: head(t, s, "s1"),
		VerificationOutcomes: []*eventsv1.VerificationOutcome{{Name: "profile_fixture_validation", Status: "passed"}}})).GetResult()
	if first.GetEvidenceId() == "" || first.GetWrite().GetDeduplicated() {
		t.Fatalf("first export %v", first)
	}
	// Same scope at the same sequence: same content, same hash, same id,
	// nothing appended twice.
	again := must[*evidencev1.ExportEvidenceResponse](t)(s.evidence.ExportEvidence(ctx, &evidencev1.ExportEvidenceRequest{Scope: scope, AtSequence: first.GetCoversSequence(),
		VerificationOutcomes: []*eventsv1.VerificationOutcome{{Name: "profile_fixture_validation", Status: "passed"}}})).GetResult()
	if again.GetContentSha256() != first.GetContentSha256() || again.GetEvidenceId() != first.GetEvidenceId() || !again.GetWrite().GetDeduplicated() {
		t.Fatalf("re-export differs: %v vs %v", again, first)
	}
	signals := map[string]string{}
	for _, sig := range first.GetSignals() {
		signals[sig.GetName()] = enums.Word(sig.GetStatus())
	}
	for name, want := range map[string]string{"tool_calls": "exported", "routing": "exported", "permission": "exported", "tasks": "exported",
		"verification_outcomes": "exported", "sandbox": "not_applicable", "hooks": "not_applicable", "thread_read_model": "exported", "failed_calls": "not_applicable"} {
		if signals[name] != want {
			t.Errorf("signal %s = %q, want %q", name, signals[name], want)
		}
	}
	for _, g := range first.GetKnownGaps() {
		if strings.HasPrefix(g, "sandbox") || strings.HasPrefix(g, "hooks") {
			t.Errorf("gap for a signal that does not apply: %s", g)
		}
	}
	// The pack in the object store is what the hash says.
	pack := must[[]byte](t)(s.log.GetObject(ctx, first.GetPack().GetUri()))
	var doc map[string]any
	if err := json.Unmarshal(pack, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"runtimeSummary", "timeline", "threadReadModel", "toolCalls", "failedCalls", "artifacts", "context", "routing", "permission",
		"sandbox", "hooks", "processes", "limits", "verificationOutcomes", "reviewNotes", "signals", "knownGaps", "telemetry"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("pack has no %s", k)
		}
	}
	for _, fn := range []func() (*evidencev1.ExportResult, error){
		func() (*evidencev1.ExportResult, error) {
			// The first export's token: its evidence.changed is folded.
			r, err := s.evidence.ExportReplay(ctx, &evidencev1.ExportReplayRequest{Scope: scope, MinSequence: first.GetWrite().GetSequence()})
			return r.GetResult(), err
		},
		func() (*evidencev1.ExportResult, error) {
			r, err := s.evidence.ExportReview(ctx, &evidencev1.ExportReviewRequest{Scope: scope, MinSequence: first.GetWrite().GetSequence(), ReviewNotes: []string{"approval path looks right"}})
			return r.GetResult(), err
		},
	} {
		r := must[*evidencev1.ExportResult](t)(fn())
		body := must[[]byte](t)(s.log.GetObject(ctx, r.GetPack().GetUri()))
		if !strings.Contains(string(body), `"evidenceLinks":["`+first.GetEvidenceId()+`"]`) {
			t.Errorf("%s does not link the evidence export", body[:min(len(body), 200)])
		}
	}

	v, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	violations := map[string]string{}
	for _, format := range []evidencev1.Format{evidencev1.Format_FORMAT_CORE, evidencev1.Format_FORMAT_LIME_PROFILE} {
		profile := format == evidencev1.Format_FORMAT_LIME_PROFILE
		events := exportAll(t, s, "s1", format)
		if len(events) < 20 {
			t.Fatalf("only %d events exported", len(events))
		}
		for _, e := range events {
			var head struct {
				Type     string `json:"type"`
				Sequence any    `json:"sequence"`
			}
			_ = json.Unmarshal([]byte(e), &head)
			if _, ok := head.Sequence.(float64); !ok {
				t.Errorf("%s: sequence is not a JSON number", head.Type)
			}
			if err := v.Event([]byte(e), profile); err != nil {
				violations[head.Type+" (profile="+map[bool]string{true: "lime", false: "core"}[profile]+")"] = err.Error()
				continue
			}
			if profile {
				kinds[head.Type] = true
			}
		}
	}
	reportViolations(t, violations)
	for _, k := range []string{"turn.submitted", "action.required", "task.attempt.failed", "routing.single_candidate", "evidence.changed"} {
		if !kinds[k] {
			t.Errorf("no valid profile %s exported", k)
		}
	}
	for _, format := range []evidencev1.Format{evidencev1.Format_FORMAT_CORE, evidencev1.Format_FORMAT_LIME_PROFILE} {
		snap := must[*evidencev1.ExportSnapshotResponse](t)(s.evidence.ExportSnapshot(ctx, &evidencev1.ExportSnapshotRequest{SessionId: "s1", Format: format}))
		if err := v.Snapshot([]byte(snap.GetSnapshotJson()), format == evidencev1.Format_FORMAT_LIME_PROFILE); err != nil {
			t.Errorf("snapshot (%v): %v\n%s", format, err, snap.GetSnapshotJson())
		}
		var sn struct {
			Threads []struct {
				Status string `json:"status"`
			} `json:"threads"`
			Tasks []struct {
				Status   string `json:"status"`
				Attempts []struct {
					Status string `json:"status"`
				} `json:"attempts"`
			} `json:"tasks"`
			EvidenceRefs []string `json:"evidenceRefs"`
		}
		_ = json.Unmarshal([]byte(snap.GetSnapshotJson()), &sn)
		if len(sn.Threads) != 1 || sn.Threads[0].Status != "completed" || len(sn.Tasks) != 1 || sn.Tasks[0].Attempts[0].Status != "failed" || len(sn.EvidenceRefs) != 1 {
			t.Errorf("snapshot says %+v", sn)
		}
	}

	// The summary comes from the projection; another tenant sees nothing.
	sum := must[*evidencev1.GetEvidenceSummaryResponse](t)(s.evidence.GetEvidenceSummary(ctx, &evidencev1.GetEvidenceSummaryRequest{SessionId: "s1", MinSequence: head(t, s, "s1")}))
	if sum.GetEventCounts()["evidence.changed"] != 3 || len(sum.GetEvidenceIds()) != 3 || sum.GetEventCount() < 20 {
		t.Errorf("summary %v", sum)
	}
	g := as(t, keyGlobex)
	if _, err := s.evidence.GetEvidenceSummary(g, &evidencev1.GetEvidenceSummaryRequest{SessionId: "s1"}); status.Code(err) != codes.NotFound {
		t.Errorf("globex summary of acme's session: %v", err)
	}
	if _, err := s.evidence.ExportEvidence(g, &evidencev1.ExportEvidenceRequest{Scope: scope}); status.Code(err) != codes.NotFound {
		t.Errorf("globex export of acme's turn: %v", err)
	}
	if _, err := s.evidence.ExportEvents(g, &evidencev1.ExportEventsRequest{SessionId: "s1"}); status.Code(err) != codes.NotFound {
		t.Errorf("globex events of acme's session: %v", err)
	}
	if _, err := s.evidence.ExportEvidence(ctx, &evidencev1.ExportEvidenceRequest{Scope: &evidencev1.Scope{SessionId: "s1", Kind: evidencev1.ScopeKind_SCOPE_KIND_TURN}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("turn scope without an id: %v", err)
	}
}

// reportViolations fails with every (event type, schema) that did not
// validate, one line each, so the report names type, field and rule.
func reportViolations(t *testing.T, v map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Errorf("%s does not validate: %s", k, v[k])
	}
}

// The evidence reads on a log of three partitions: exports, snapshots and
// summaries are cut at the session's partition's checkpoint (a session's
// positions are of its partition), and a comparison waits for the
// partitions of its trials' sessions.
func TestEvidenceOnAPartitionedLog(t *testing.T) {
	t.Setenv("AR_TEST_PARTITIONS", "3")
	for name, test := range map[string]func(*testing.T){
		"export and profile conformance": TestEvidenceExportAndProfileConformance,
		"every produced event":           TestEveryProducedEventExportsValid,
		"snapshot":                       TestSnapshotCarriesTheCompactionBoundary,
		"trial export":                   TestBenchmarkTrialExport,
		"comparison":                     TestBenchmarkComparisonCarriesItsConfigurations,
	} {
		t.Run(name, test)
	}
}

package all_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	controlreadmodel "github.com/agentruntime/agentruntime/services/control/readmodel"
	evidencereadmodel "github.com/agentruntime/agentruntime/services/evidence/readmodel"
	permissionreadmodel "github.com/agentruntime/agentruntime/services/permission/readmodel"
	routingreadmodel "github.com/agentruntime/agentruntime/services/routing/readmodel"
	tasksreadmodel "github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

// Guard G-2 of docs/partitions.md: a read model must not depend on the
// order in which the partitions of the log are folded. Two replicas (or a
// replica and a rebuild) fold the same partitions with their own timing:
// a fold that reads and rewrites a document, a counter or an index member
// that facts of another partition also write (a lost update, LU-*) or
// whose result depends on which partition came first ends up different.
//
// The test runs the five services on a log of 3 partitions, drives a
// scenario over sessions of every partition and session-less tenant facts
// through their gRPC APIs, then folds the log again, once per projection
// of every service, into fresh stores in several interleavings of the
// partitions, and compares the stores key by key. The interleavings:
//
//   - by partition: all of partition 0, then 1, then 2, one event at a
//     time (the reference);
//   - round robin: one event of partition 2, then 1, then 0, and again;
//   - concurrent round robin: in each round partitions 2, 1 and 0 each
//     fold their next event on the store as the round found it, then write
//     in that order, as three partition loops folding at the same moment
//     do (each batch under its own partition's checkpoint);
//   - random: rounds of a random set of partitions, each folding a random
//     batch of its next events on the store as the round found it, written
//     in a random order (fixed seed).
//
// The sequential orders catch folds whose result depends on the order of
// partitions; the concurrent ones also catch read-modify-writes of one key
// from two partitions (a sum, an append), which no sequential order loses.
func TestReadModelsDoNotDependOnThePartitionInterleaving(t *testing.T) {
	const partitions = 3
	start := time.Now()
	sys := startPartitionedSystem(t, partitions)
	sessions := sessionsInEveryPartition(t, sys.log, foldTenant, 4)
	driveScenario(t, sys, sessions)
	t.Logf("scenario over %d sessions: %v", len(sessions), time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, svc := range foldedServices(sys.log) {
		for _, p := range svc.projections {
			if err := projector.CaughtUp(ctx, sys.log, sys.stores[svc.name], p.Name(), p.Filters(), 30*time.Second); err != nil {
				t.Fatalf("%s: %v", p.Name(), err)
			}
		}
	}

	folded := time.Now()
	events := 0
	sessionless := sys.log.Subjects.PartitionOf(foldTenant, eventlog.NoSession)
	for _, svc := range foldedServices(sys.log) {
		for _, p := range svc.projections {
			recs := readPartitions(ctx, t, sys.log, p)
			for _, r := range recs {
				events += len(r)
			}
			w := writers{}
			stores := make([]*projection.Memory, len(orders))
			for i, o := range orders {
				stores[i] = fold(ctx, t, p, recs, o, w)
			}
			if n, diffs := compareFolds(stores, w, svc.decode); n > 0 {
				t.Errorf("%s: %d keys of the read model depend on the interleaving of the partitions' folds: a lost update "+
					"or a fold that reads another partition's documents (docs/partitions.md LU-*, XR-3; guard G-2). "+
					"The tenant's session-less facts are in partition %d.\n%s", p.Name(), n, sessionless, diffs)
			}
		}
	}
	t.Logf("re-folded %d events in %d interleavings: %v", events, len(orders), time.Since(folded).Round(time.Millisecond))
}

const foldTenant = "acme"

// orderModels prices one model and budgets the tenant and every task, so
// recorded costs add up in the tenant's and the tasks' spend.
const orderModels = `
providers:
  - {id: openai, credential_status: present, regions: [us]}
models:
  - id: gpt-5-4
    provider: openai
    capabilities: [tools]
    context_window: 400000
    prices_usd_per_million: {input: 1.25, output: 10}
budgets:
  - {id: tenant, scope: tenant, limit_usd: 1000}
  - {id: every-task, scope: task, limit_usd: 1000}
`

// partitionedSystem is the five services on one log (startSystem), with
// the log and each service's store.
type partitionedSystem struct {
	clients
	log    *eventlog.Log
	stores map[string]*projection.Memory // by service name
}

// startPartitionedSystem runs the five services as `agentruntime dev`
// does, on a log of the given number of partitions, each service with its
// own in-memory store.
func startPartitionedSystem(t *testing.T, partitions int) *partitionedSystem {
	t.Helper()
	return startSystem(t, orderModels, partitions)
}

// sessionsInEveryPartition picks perPartition sessions of the tenant in
// each partition, in turn (s00 of partition 0, then one of 1, ...).
func sessionsInEveryPartition(t *testing.T, log *eventlog.Log, tenant string, perPartition int) []string {
	t.Helper()
	byPartition := make([][]string, log.Partitions())
	for i := 0; i < 1000; i++ {
		s := fmt.Sprintf("s%02d", i)
		k := log.Subjects.PartitionOf(tenant, s)
		if len(byPartition[k]) < perPartition {
			byPartition[k] = append(byPartition[k], s)
		}
	}
	var out []string
	for i := range perPartition {
		for k, ss := range byPartition {
			if len(ss) < perPartition {
				t.Fatalf("partition %d has only sessions %v", k, ss)
			}
			out = append(out, ss[i])
		}
	}
	return out
}

// driveScenario runs, through the services' gRPC APIs, in every session:
// a thread with a turn claimed by a worker that reports model and process
// facts, its cost and its completion, and a second turn queued behind it;
// and across sessions and partitions: costs charged to the tenant's budget
// and to one task from every partition, a session budget set through the
// limits API, a cost whose scope names a thread of another session, a
// task profile resolved with and without a session, tasks blocked by
// tasks of other partitions, a session-less parent with children in
// every session (cancelled), a session-less task naming a session's
// thread, a tenant-level rule and a session-level mode, an approval asked
// by the permission service and answered through control, an approval
// requested by a worker and answered, a subagent and an evidence export.
func driveScenario(t *testing.T, sys *partitionedSystem, sessions []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+pinnedKey), 60*time.Second)
	defer cancel()
	ok := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	text := func(s string) []*eventsv1.InputPart {
		return []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: s}}}
	}
	thread := func(s string) string { return "th-" + s }
	// seen waits until control's read model has the position (a thread's
	// read with min_sequence waits in the position's partition), so that
	// the next call, which looks an id up, finds it.
	seen := func(s string, seq uint64) *controlv1.ThreadRead {
		t.Helper()
		r, err := sys.control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: s, ThreadId: thread(s), MinSequence: seq})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetThread()
	}

	// Tenant facts (session-less): a rule, a budget of every session, a
	// tool inventory.
	ok(sys.permission.PutRules(ctx, &permissionv1.PutRulesRequest{Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT},
		Rules: []*eventsv1.PermissionRule{{RuleId: "no-force-push", Effect: eventsv1.RuleEffect_RULE_EFFECT_DENY, Tool: "shell", Commands: []string{"git push"}}}}))
	ok(sys.routing.UpdateLimitConfig(ctx, &routingv1.UpdateLimitConfigRequest{Changes: []*routingv1.LimitConfigChange{
		{Change: &routingv1.LimitConfigChange_SetBudget{SetBudget: &eventsv1.Budget{Id: "per-session", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_SESSION, LimitNanos: 500e9}}}}}))
	ok(sys.control.RegisterTools(ctx, &controlv1.RegisterToolsRequest{WorkerId: "w1", Tools: []*eventsv1.ToolSpec{{Name: "read_file", ReadOnly: true}}}))

	// Every session: a turn claimed by a worker, a second one queued.
	turns, queued, ended := map[string]string{}, map[string]string{}, map[string]uint64{}
	for i, s := range sessions {
		sub, err := sys.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: s, ThreadId: thread(s), Input: text("build " + s)})
		if err != nil {
			t.Fatal(err)
		}
		turns[s] = sub.GetTurn().GetTurnId()
		second, err := sys.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: s, ThreadId: thread(s), Input: text("then test " + s)})
		if err != nil {
			t.Fatal(err)
		}
		queued[s] = second.GetTurn().GetTurnId()
		claim, err := sys.control.ClaimTurn(ctx, &controlv1.ClaimTurnRequest{WorkerId: fmt.Sprintf("w%d", i), SessionId: s, Wait: durationpb.New(20 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if claim.GetTurn().GetTurnId() != turns[s] {
			t.Fatalf("claim in %s: got %v, want turn %s", s, claim.GetTurn(), turns[s])
		}
		report := func(evs ...*eventsv1.RuntimeEvent) uint64 {
			t.Helper()
			for _, ev := range evs {
				ev.SessionId, ev.ThreadId, ev.TurnId = s, thread(s), turns[s]
			}
			r, err := sys.control.ReportEvents(ctx, &controlv1.ReportEventsRequest{RunId: claim.GetRunId(), LeaseToken: claim.GetLeaseToken(), Events: evs})
			if err != nil {
				t.Fatal(err)
			}
			return r.GetSequence()
		}
		report(
			&eventsv1.RuntimeEvent{Type: "model.requested", Payload: &eventsv1.RuntimeEvent_ModelRequested{ModelRequested: &eventsv1.ModelRequested{Provider: "openai", Model: "gpt-5-4"}}},
			&eventsv1.RuntimeEvent{Type: "process.started", ProcessId: "proc-" + s, Payload: &eventsv1.RuntimeEvent_ProcessStarted{ProcessStarted: &eventsv1.ProcessStarted{Command: "go test ./...", Cwd: "/work"}}},
			&eventsv1.RuntimeEvent{Type: "process.completed", ProcessId: "proc-" + s, Payload: &eventsv1.RuntimeEvent_ProcessCompleted{ProcessCompleted: &eventsv1.ProcessCompleted{ExitCode: 0}}},
			&eventsv1.RuntimeEvent{Type: "model.completed", Payload: &eventsv1.RuntimeEvent_ModelCompleted{ModelCompleted: &eventsv1.ModelCompleted{Provider: "openai", Model: "gpt-5-4",
				Usage: &eventsv1.ModelUsage{InputTokens: 1000, OutputTokens: 100}}}},
		)
		// Cost of the turn, charged to the tenant and to one task from
		// every partition.
		ok(sys.routing.RecordCost(ctx, &routingv1.RecordCostRequest{ModelId: "gpt-5-4", UsageId: "u1",
			Scope: &routingv1.TurnScope{SessionId: s, ThreadId: thread(s), TurnId: turns[s], TaskId: "tk-shared", RunId: claim.GetRunId()},
			Usage: &routingv1.Usage{InputTokens: int64(1000 + i), OutputTokens: 100}}))
		ended[s] = report(&eventsv1.RuntimeEvent{Type: "turn.completed", Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: "done", StopReason: "end_turn"}}})
	}
	// A cost whose scope names a thread of another session (scopes are
	// the caller's: LU-4's path through routing).
	ok(sys.routing.RecordCost(ctx, &routingv1.RecordCostRequest{ModelId: "gpt-5-4", UsageId: "u1",
		Scope: &routingv1.TurnScope{SessionId: sessions[0], ThreadId: thread(sessions[1]), TurnId: "turn-elsewhere"},
		Usage: &routingv1.Usage{InputTokens: 10}}))
	// The shared task's profile, resolved before any turn without a
	// session and in a session (two aggregates, two partitions: LU-3).
	ok(sys.routing.ResolveTaskProfile(ctx, &routingv1.ResolveTaskProfileRequest{Scope: &routingv1.ProfileScope{TaskId: "tk-shared"}, Kind: "coding"}))
	ok(sys.routing.ResolveTaskProfile(ctx, &routingv1.ResolveTaskProfileRequest{Scope: &routingv1.ProfileScope{SessionId: sessions[1], TaskId: "tk-shared"}, Kind: "chat"}))

	// Tasks. Each session's task is blocked by the previous session's
	// (another partition); a session-less parent has a child in every
	// session; one session-less task names a thread of a session.
	ok(sys.tasks.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "tk-parent", Spec: &tasksv1.TaskSpec{Title: "parent of every session's child"}}))
	for i, s := range sessions {
		req := &tasksv1.CreateTaskRequest{TaskId: "tk-" + s, SessionId: s, ThreadId: thread(s), TurnId: turns[s], Spec: &tasksv1.TaskSpec{Title: "work of " + s}}
		if i > 0 {
			req.BlockedBy = []string{"tk-" + sessions[i-1]}
		}
		ok(sys.tasks.CreateTask(ctx, req))
		ok(sys.tasks.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "tk-child-" + s, SessionId: s, ParentTaskId: "tk-parent", Spec: &tasksv1.TaskSpec{Title: "child in " + s}}))
	}
	// The chain of blocked tasks runs in order: each starts once the task
	// of the previous partition completed and its dependents were told.
	for _, s := range sessions {
		var run string
		deadline := time.Now().Add(30 * time.Second)
		for {
			res, err := sys.tasks.StartTask(ctx, &tasksv1.StartTaskRequest{TaskId: "tk-" + s, Worker: &tasksv1.WorkerRef{WorkerId: "w-" + s, Kind: "agent", ThreadId: thread(s)}})
			if err == nil {
				run = res.GetRunId()
				break
			}
			if status.Code(err) != codes.FailedPrecondition || time.Now().After(deadline) {
				t.Fatalf("start tk-%s: %v", s, err)
			}
			time.Sleep(20 * time.Millisecond) // the dependency reactor has not unblocked it yet: poll
		}
		ok(sys.tasks.CompleteTask(ctx, &tasksv1.CompleteTaskRequest{TaskId: "tk-" + s, RunId: run, Summary: "done"}))
	}
	ok(sys.tasks.CancelTask(ctx, &tasksv1.CancelTaskRequest{TaskId: "tk-parent", Reason: "scenario over"}))
	// A session-less task shown on a session's thread (LU-4's path): a
	// service that refuses a thread outside the task's session is fine too.
	if _, err := sys.tasks.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "tk-loose", ThreadId: thread(sessions[1]), Spec: &tasksv1.TaskSpec{Title: "no session"}}); err != nil {
		if c := status.Code(err); c != codes.InvalidArgument && c != codes.FailedPrecondition {
			t.Fatal(err)
		}
		t.Logf("a session-less task on a session's thread is refused: %v", err)
	}

	// The first turns completed: every session's second turn is active
	// now (unclaimed) once control has dequeued it.
	active := func(s string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); seen(s, ended[s]).GetActiveTurnId() != queued[s]; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: turn %s never became active", s, queued[s])
			}
			time.Sleep(10 * time.Millisecond) // the dequeue follows the completion: poll
		}
	}

	// Permission: an untrusted session asks before a shell command; the
	// approval is answered through control. Another session's push is
	// denied by the tenant rule.
	asker, denied := sessions[0], sessions[2]
	active(asker)
	mode, err := sys.permission.SetPermissionMode(ctx, &permissionv1.SetPermissionModeRequest{
		Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionId: asker},
		Mode:  eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED, Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	eval, err := sys.permission.EvaluatePermission(ctx, &permissionv1.EvaluatePermissionRequest{SessionId: asker, ThreadId: thread(asker), TurnId: queued[asker],
		StepId: "step1", ToolCallId: "tc1", Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE,
		Command: "npm install left-pad", MinSequence: mode.GetWrite().GetSequence(), ApprovalTimeout: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if eval.GetEvaluation().GetDecision() != eventsv1.Decision_DECISION_ASK {
		t.Fatalf("untrusted shell command: %v", eval.GetEvaluation())
	}
	action := eval.GetEvaluation().GetApprovalActionId()
	required := awaitEvent(t, sys.log, asker, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "action.required" && e.GetActionId() == action
	})
	seen(asker, required.GetSequence())
	ok(sys.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: action, Decision: "allow_once"}))
	resolved := awaitEvent(t, sys.log, asker, func(e *eventsv1.RuntimeEvent) bool {
		return e.GetType() == "permission.resolved" && e.GetActionId() == action
	})
	if got := resolved.GetPermissionResolved().GetDecision(); got != "allow_once" {
		t.Fatalf("approval resolved as %v", resolved.GetPermissionResolved())
	}
	push, err := sys.permission.EvaluatePermission(ctx, &permissionv1.EvaluatePermissionRequest{SessionId: denied, ThreadId: thread(denied), TurnId: queued[denied],
		Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE, Command: "git push origin main"})
	if err != nil {
		t.Fatal(err)
	}
	if push.GetEvaluation().GetDecision() != eventsv1.Decision_DECISION_DENY {
		t.Fatalf("push under the tenant rule: %v", push.GetEvaluation())
	}

	// A worker's approval in another session, answered.
	worker := sessions[4]
	active(worker)
	asked, err := sys.control.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: worker, ThreadId: thread(worker), TurnId: queued[worker],
		ActionId: "act-" + worker, ActionType: "tool_permission", Prompt: "Allow write_file?", Decisions: []string{"allow_once", "deny"}})
	if err != nil {
		t.Fatal(err)
	}
	seen(worker, asked.GetSequence())
	ok(sys.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act-" + worker, Decision: "deny"}))

	// A subagent of a session's thread, which completes and is closed.
	parent := sessions[5]
	active(parent)
	spawned, err := sys.control.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: parent, ParentThreadId: thread(parent), ParentTurnId: queued[parent],
		SubagentId: "sub-" + parent, Role: "researcher", Objective: "look", Input: text("look at the logs")})
	if err != nil {
		t.Fatal(err)
	}
	seen(parent, spawned.GetSequence())
	ok(sys.control.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{Type: "subagent.completed",
		SessionId: parent, ThreadId: thread(parent), TurnId: queued[parent], SubagentId: "sub-" + parent,
		Payload: &eventsv1.RuntimeEvent_SubagentCompleted{SubagentCompleted: &eventsv1.SubagentStatus{Status: "completed", Summary: "found it"}}}}}))
	ok(sys.control.CloseSubagent(ctx, &controlv1.CloseSubagentRequest{SessionId: parent, SubagentId: "sub-" + parent}))

	// An evidence export of a session, at its partition's head.
	exported := sessions[3]
	head, err := sys.log.Of(foldTenant, exported).Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ok(sys.evidence.ExportEvidence(ctx, &evidencev1.ExportEvidenceRequest{MinSequence: head,
		Scope: &evidencev1.Scope{SessionId: exported, Kind: evidencev1.ScopeKind_SCOPE_KIND_SESSION}}))
}

// awaitEvent follows a session's facts until one matches.
func awaitEvent(t *testing.T, log *eventlog.Log, session string, match func(*eventsv1.RuntimeEvent) bool) *eventsv1.RuntimeEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	view := log.Of(foldTenant, session)
	sub, err := view.Subscribe(ctx, []string{view.Subjects.Session(foldTenant, session)}, eventlog.FromStart)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	for {
		rec, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no matching event in session %s: %v", session, err)
		}
		if match(rec.Event) {
			return rec.Event
		}
	}
}

// foldedService is a service's projections and how to show its documents.
type foldedService struct {
	name        string
	projections []projector.Projection
	decode      func(key string) proto.Message // the document type of a key; nil: not protobuf
}

func foldedServices(log *eventlog.Log) []foldedService {
	byPrefix := func(types map[string]func() proto.Message) func(string) proto.Message {
		return func(key string) proto.Message {
			for prefix, m := range types {
				if strings.HasPrefix(key, prefix) || strings.Contains(key, ":"+prefix) {
					return m()
				}
			}
			return nil
		}
	}
	return []foldedService{
		{name: "control", projections: []projector.Projection{controlreadmodel.Projection{}, controlreadmodel.Claims{}}, decode: byPrefix(map[string]func() proto.Message{
			"sess:": func() proto.Message { return &controlv1.Session{} }, "thr:": func() proto.Message { return &controlv1.ThreadRead{} },
			"turn:": func() proto.Message { return &controlv1.Turn{} }, "act:": func() proto.Message { return &controlv1.Action{} },
			"sub:": func() proto.Message { return &controlv1.Subagent{} }, "chan:": func() proto.Message { return &controlv1.Channel{} },
			"proc:": func() proto.Message { return &controlv1.Process{} }, "attempts:": func() proto.Message { return &controlv1.TurnAttempts{} },
			"tools:": func() proto.Message { return &eventsv1.SnapshotUpdated{} },
		})},
		{name: "tasks", projections: []projector.Projection{tasksreadmodel.Records{Subjects: log.Subjects}}, decode: byPrefix(map[string]func() proto.Message{
			"task:": func() proto.Message { return &tasksv1.Task{} }, "job:": func() proto.Message { return &tasksv1.Job{} },
		})},
		{name: "routing", projections: []projector.Projection{routingreadmodel.Projection{Subjects: log.Subjects}}, decode: byPrefix(map[string]func() proto.Message{
			"turn/": func() proto.Message { return &routingv1.RoutingLimitSummary{} }, "thread/": func() proto.Message { return &routingv1.RoutingLimitSummary{} },
			"reg/": func() proto.Message { return &eventsv1.Registry{} }, "taskprof/": func() proto.Message { return &eventsv1.TaskProfile{} },
		})},
		{name: "permission", projections: []projector.Projection{permissionreadmodel.New(log.Subjects)}, decode: byPrefix(map[string]func() proto.Message{
			"level:": func() proto.Message { return &permissionv1.LevelState{} }, "hooks": func() proto.Message { return &permissionv1.ListHooksResponse{} },
			"evaluation:":  func() proto.Message { return &permissionv1.DecisionSummary{} },
			"summary:":     func() proto.Message { return &permissionv1.GetPermissionSandboxSummaryResponse{} },
			"environment:": func() proto.Message { return &permissionv1.GetExecutionEnvironmentResponse{} },
		})},
		{name: "evidence", projections: []projector.Projection{evidencereadmodel.Projection{}}, decode: func(string) proto.Message { return nil }},
	}
}

// readPartitions reads what the projection follows in each partition.
func readPartitions(ctx context.Context, t *testing.T, log *eventlog.Log, p projector.Projection) [][]*eventlog.Record {
	t.Helper()
	out := make([][]*eventlog.Record, log.Partitions())
	for k := range out {
		if _, err := log.Partition(k).Read(ctx, p.Filters(), eventlog.FromStart, func(r *eventlog.Record) error {
			out[k] = append(out[k], r)
			return nil
		}); err != nil {
			t.Fatalf("read partition %d for %s: %v", k, p.Name(), err)
		}
	}
	return out
}

// move is partition k folding its next n events.
type move struct{ k, n int }

// order is an interleaving of the partitions' folds: rounds of moves.
// The moves of a concurrent round all fold on the store as the round
// found it and are written after, in the order given; otherwise each is
// applied before the next folds.
type order struct {
	name       string
	concurrent bool
	// rounds starts a fold: it returns the next round given how many
	// events each partition has left, none when nothing is left.
	rounds func() func(left []int) []move
}

var orders = []order{
	{name: "by partition (0, 1, 2)", rounds: stateless(byPartition)},
	{name: "round robin (2, 1, 0)", rounds: stateless(roundRobin)},
	{name: "concurrent round robin (2, 1, 0)", concurrent: true, rounds: stateless(roundRobin)},
	{name: "random concurrent batches (seed 1)", concurrent: true, rounds: randomRounds(1)},
}

func stateless(next func(left []int) []move) func() func(left []int) []move {
	return func() func(left []int) []move { return next }
}

func byPartition(left []int) []move {
	for k, n := range left {
		if n > 0 {
			return []move{{k, n}}
		}
	}
	return nil
}

func roundRobin(left []int) []move {
	var ms []move
	for k := len(left) - 1; k >= 0; k-- {
		if left[k] > 0 {
			ms = append(ms, move{k, 1})
		}
	}
	return ms
}

// randomRounds: each partition with events left takes part in a round
// with probability 2/3, folding 1 to 6 of its next events; the writes
// follow in a random order. Each fold starts from the same seed.
func randomRounds(seed uint64) func() func(left []int) []move {
	return func() func(left []int) []move {
		rng := rand.New(rand.NewPCG(seed, seed))
		return func(left []int) []move {
			var ms []move
			for {
				for _, k := range rng.Perm(len(left)) {
					if left[k] > 0 && rng.IntN(3) > 0 {
						ms = append(ms, move{k, 1 + rng.IntN(min(left[k], 6))})
					}
				}
				if len(ms) > 0 || !slices.ContainsFunc(left, func(n int) bool { return n > 0 }) {
					return ms
				}
			}
		}
	}
}

// named is a projection under its partition's checkpoint name, as the
// projector's loop of that partition runs it.
type named struct {
	projector.Projection
	name string
}

func (n named) Name() string { return n.name }

// writers are, per document key or index member ("index ∋ member"), the
// event types of each partition whose fold wrote it.
type writers map[string]map[int]map[string]bool

// fold applies every partition's records to a fresh store in the order
// o, each partition under its own checkpoint, and notes in w who wrote
// what.
func fold(ctx context.Context, t *testing.T, p projector.Projection, recs [][]*eventlog.Record, o order, w writers) *projection.Memory {
	t.Helper()
	store := projection.NewMemory()
	note := func(k int, typ string, b projection.Batch) {
		add := func(key string) {
			if w[key] == nil {
				w[key] = map[int]map[string]bool{}
			}
			if w[key][k] == nil {
				w[key][k] = map[string]bool{}
			}
			w[key][k][typ] = true
		}
		for _, kv := range b.Puts {
			add(kv.Key)
		}
		for _, key := range b.Deletes {
			add(key)
		}
		for _, e := range append(slices.Clone(b.IndexAdds), b.IndexRemoves...) {
			add(e.Index + " ∋ " + e.Member)
		}
	}
	parts := len(recs)
	next := make([]int, parts)
	left := func() []int {
		l := make([]int, parts)
		for k := range l {
			l[k] = len(recs[k]) - next[k]
		}
		return l
	}
	nameOf := func(k int) string { return projector.CheckpointName(p.Name(), parts, k) }
	rounds := o.rounds()
	for {
		moves := rounds(left())
		if len(moves) == 0 {
			return store
		}
		if !o.concurrent {
			for _, m := range moves {
				for range m.n {
					rec := recs[m.k][next[m.k]]
					next[m.k]++
					// The batch ApplyOne applies (Project is deterministic), seen
					// for the writers.
					b, err := p.Project(ctx, store, rec)
					if err != nil {
						t.Fatalf("project %s at %d (%s): %v", p.Name(), rec.Event.GetSequence(), rec.Event.GetType(), err)
					}
					note(m.k, rec.Event.GetType(), b)
					if err := projector.ApplyOne(ctx, store, named{p, nameOf(m.k)}, rec); err != nil {
						t.Fatal(err)
					}
				}
			}
			continue
		}
		// Every move folds on the store as the round found it (an overlay
		// each, as ApplyBatch folds), then the batches are written.
		var batches []projection.Batch
		for _, m := range moves {
			ov := projection.NewOverlay(store)
			var last uint64
			for range m.n {
				rec := recs[m.k][next[m.k]]
				next[m.k]++
				b, err := p.Project(ctx, ov, rec)
				if err != nil {
					t.Fatalf("project %s at %d (%s): %v", p.Name(), rec.Event.GetSequence(), rec.Event.GetType(), err)
				}
				if _, err := ov.Apply(ctx, b); err != nil {
					t.Fatal(err)
				}
				note(m.k, rec.Event.GetType(), b)
				last = rec.Event.GetSequence()
			}
			base, err := store.Checkpoint(ctx, nameOf(m.k))
			if err != nil {
				t.Fatal(err)
			}
			b := ov.Batch(nameOf(m.k), last)
			b.Conditional, b.Base = true, base
			batches = append(batches, b)
		}
		for _, b := range batches {
			if applied, err := store.Apply(ctx, b); err != nil || !applied {
				t.Fatalf("write %s at %d: applied %v, %v", b.Projection, b.Sequence, applied, err)
			}
		}
	}
}

// difference is one key whose value differs between two stores.
type difference struct {
	key    string
	a, b   string // how each store has it ("" when absent)
	fields []string
}

// compareStores lists every document and index member that a and b do
// not hold alike.
func compareStores(a, b *projection.Memory, decode func(string) proto.Message) []difference {
	docsA, ixA := a.Dump()
	docsB, ixB := b.Dump()
	var out []difference
	for _, key := range unionKeys(docsA, docsB) {
		va, inA := docsA[key]
		vb, inB := docsB[key]
		if inA && inB && sameDoc(key, va, vb, decode) {
			continue
		}
		d := difference{key: key}
		d.a, d.b, d.fields = showDocs(key, va, inA, vb, inB, decode)
		out = append(out, d)
	}
	for _, index := range unionKeys(ixA, ixB) {
		ma, mb := members(ixA[index]), members(ixB[index])
		for _, m := range unionKeys(ma, mb) {
			sa, inA := ma[m]
			sb, inB := mb[m]
			if inA == inB && sa == sb {
				continue
			}
			show := func(score float64, in bool) string {
				if !in {
					return ""
				}
				return fmt.Sprintf("member, score %v", score)
			}
			key := index + " ∋ " + m
			out = append(out, difference{key: key, a: show(sa, inA), b: show(sb, inB)})
		}
	}
	return out
}

// sameDoc compares two versions of a document by what they mean: map
// entries of a protobuf message are marshalled in no fixed order.
func sameDoc(key string, va, vb []byte, decode func(string) proto.Message) bool {
	if string(va) == string(vb) {
		return true
	}
	if m := decode(key); m != nil {
		ma, mb := m, proto.Clone(m)
		if proto.Unmarshal(va, ma) == nil && proto.Unmarshal(vb, mb) == nil {
			return proto.Equal(ma, mb)
		}
	}
	var ja, jb any
	if json.Unmarshal(va, &ja) == nil && json.Unmarshal(vb, &jb) == nil {
		return reflect.DeepEqual(ja, jb)
	}
	return false
}

func members(es []projection.IndexEntry) map[string]float64 {
	m := make(map[string]float64, len(es))
	for _, e := range es {
		m[e.Member] = e.Score
	}
	return m
}

func unionKeys[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// showDocs renders two versions of a document, and the fields in which
// they differ when it is a protobuf message or a JSON object: only those
// fields are shown.
func showDocs(key string, va []byte, inA bool, vb []byte, inB bool, decode func(string) proto.Message) (string, string, []string) {
	if !inA || !inB {
		show := func(v []byte, in bool) string {
			if !in {
				return ""
			}
			return showValue(key, v, decode)
		}
		return show(va, inA), show(vb, inB), nil
	}
	if m := decode(key); m != nil {
		ma, mb := m, proto.Clone(m)
		if proto.Unmarshal(va, ma) == nil && proto.Unmarshal(vb, mb) == nil {
			// Each field alone in a message of its own: compared and shown.
			only := func(m proto.Message, fd protoreflect.FieldDescriptor) proto.Message {
				out := m.ProtoReflect().New()
				if m.ProtoReflect().Has(fd) {
					out.Set(fd, m.ProtoReflect().Get(fd))
				}
				return out.Interface()
			}
			var fields, sa, sb []string
			fds := ma.ProtoReflect().Descriptor().Fields()
			for i := range fds.Len() {
				fd := fds.Get(i)
				if fa, fb := only(ma, fd), only(mb, fd); !proto.Equal(fa, fb) {
					fields = append(fields, string(fd.Name()))
					sa = append(sa, compactText(fa))
					sb = append(sb, compactText(fb))
				}
			}
			return strings.Join(sa, " "), strings.Join(sb, " "), fields
		}
	}
	var ja, jb map[string]any
	if json.Unmarshal(va, &ja) == nil && json.Unmarshal(vb, &jb) == nil {
		var fields, sa, sb []string
		for _, f := range unionKeys(ja, jb) {
			x, _ := json.Marshal(ja[f])
			y, _ := json.Marshal(jb[f])
			if string(x) != string(y) {
				fields = append(fields, f)
				sa = append(sa, f+":"+string(x))
				sb = append(sb, f+":"+string(y))
			}
		}
		return strings.Join(sa, " "), strings.Join(sb, " "), fields
	}
	return showValue(key, va, decode), showValue(key, vb, decode), nil
}

func showValue(key string, v []byte, decode func(string) proto.Message) string {
	if m := decode(key); m != nil && proto.Unmarshal(v, m) == nil {
		return compactText(m)
	}
	if utf8.Valid(v) {
		return clip(string(v))
	}
	return clip(fmt.Sprintf("%q", v))
}

func compactText(m proto.Message) string {
	return clip(prototext.MarshalOptions{}.Format(m))
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// compareFolds compares each store with the first (the reference) and
// renders every key that differs in one of them, at most 30: who wrote
// it, and how each interleaving that differs has it.
func compareFolds(stores []*projection.Memory, w writers, decode func(string) proto.Message) (int, string) {
	byKey := map[string][]difference{} // by key, per store after the first
	for i, st := range stores[1:] {
		for _, d := range compareStores(stores[0], st, decode) {
			if byKey[d.key] == nil {
				byKey[d.key] = make([]difference, len(stores)-1)
			}
			byKey[d.key][i] = d
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	absent := func(s string) string {
		if s == "" {
			return "(absent)"
		}
		return s
	}
	var b strings.Builder
	for n, key := range keys {
		if n == 30 {
			fmt.Fprintf(&b, "  … and %d more keys\n", len(keys)-n)
			break
		}
		fmt.Fprintf(&b, "  %s\n    written by: %s\n", key, w.of(key))
		for i, d := range byKey[key] {
			if d.key == "" {
				continue
			}
			name := orders[i+1].name
			if j := slices.IndexFunc(byKey[key][:i], func(e difference) bool { return e.key != "" && e.a == d.a && e.b == d.b }); j >= 0 {
				fmt.Fprintf(&b, "    %s: the same as %s\n", name, orders[j+1].name)
				continue
			}
			if len(d.fields) > 0 {
				fmt.Fprintf(&b, "    %s differs in %s:\n", name, strings.Join(d.fields, ", "))
			} else {
				fmt.Fprintf(&b, "    %s differs:\n", name)
			}
			fmt.Fprintf(&b, "      %s: %s\n      %s: %s\n", orders[0].name, absent(d.a), name, absent(d.b))
		}
	}
	return len(keys), b.String()
}

// of renders the partitions whose folds wrote a key, with the event types.
func (w writers) of(key string) string {
	ks := make([]int, 0, len(w[key]))
	for k := range w[key] {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var ws []string
	for _, k := range ks {
		types := make([]string, 0, len(w[key][k]))
		for typ := range w[key][k] {
			types = append(types, typ)
		}
		sort.Strings(types)
		ws = append(ws, fmt.Sprintf("partition %d (%s)", k, strings.Join(types, ", ")))
	}
	if len(ws) == 0 {
		return "none noted"
	}
	if len(ks) > 1 {
		return strings.Join(ws, "; ") + " <- the folds of several partitions write it"
	}
	return ws[0]
}

package all_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
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
	"github.com/agentruntime/agentruntime/pkg/testkit"
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
		testkit.Eventually(t, "tk-"+s+" unblocked and started", func() bool {
			res, err := sys.tasks.StartTask(ctx, &tasksv1.StartTaskRequest{TaskId: "tk-" + s, Worker: &tasksv1.WorkerRef{WorkerId: "w-" + s, Kind: "agent", ThreadId: thread(s)}})
			if err != nil && status.Code(err) != codes.FailedPrecondition {
				t.Fatalf("start tk-%s: %v", s, err)
			}
			run = res.GetRunId()
			return err == nil // FailedPrecondition: the dependency reactor has not unblocked it yet
		})
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
		// The dequeue follows the completion.
		testkit.Eventually(t, s+": turn "+queued[s]+" active", func() bool { return seen(s, ended[s]).GetActiveTurnId() == queued[s] })
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

var orders = []order{
	{name: "by partition (0, 1, 2)", rounds: stateless(byPartition)},
	{name: "round robin (2, 1, 0)", rounds: stateless(roundRobin)},
	{name: "concurrent round robin (2, 1, 0)", concurrent: true, rounds: stateless(roundRobin)},
	{name: "random concurrent batches (seed 1)", concurrent: true, rounds: randomRounds(1)},
}

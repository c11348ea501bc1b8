package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

// createTask creates an agent task on its own thread of session s1.
func createTask(t *testing.T, tc tasksv1.TasksServiceClient, thread, objective string) string {
	t.Helper()
	created, err := tc.CreateTask(context.Background(), &tasksv1.CreateTaskRequest{SessionId: "s1", ThreadId: thread,
		Spec: &tasksv1.TaskSpec{Objective: objective, TaskKind: "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	return created.GetTask().GetTaskId()
}

// untilTaskEvent follows the timeline to an event of the task (one it
// already saw included).
func (tl *timeline) untilTaskEvent(task, typ string) *eventsv1.RuntimeEvent {
	tl.t.Helper()
	for _, ev := range tl.seen {
		if ev.GetTaskId() == task && ev.GetType() == typ {
			return ev
		}
	}
	for {
		m, err := tl.stream.Recv()
		if err != nil {
			tl.t.Fatalf("waiting for %s of %s after %v: %v", typ, task, testkit.Types(tl.seen), err)
		}
		ev := m.GetEvent()
		if ev == nil {
			continue
		}
		tl.seen = append(tl.seen, ev)
		if ev.GetTaskId() == task && ev.GetType() == typ {
			return ev
		}
	}
}

// taskAt reads a task at least as new as the event.
func taskAt(t *testing.T, tc tasksv1.TasksServiceClient, id string, ev *eventsv1.RuntimeEvent) *tasksv1.Task {
	t.Helper()
	got, err := tc.GetTask(context.Background(), &tasksv1.GetTaskRequest{TaskId: id, MinSequence: ev.GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	return got.GetTask()
}

// A task whose turn waits for a person holds no task slot: with one slot,
// a second task completes while the first waits for its approval; once
// approved, the first completes as its one run, settled by the runtime
// with the turn's summary.
func TestAWaitingTaskHoldsNoTaskSlot(t *testing.T) {
	rt := startRuntimeWith(t, true)
	root := workspace(t)
	rt.startStoppableWorker(t, "w", root, func(c *worker.Config) { c.Tasks, c.MaxTasks = true, 1 })
	tl := rt.follow(t, "s1")
	tc := tasksv1.NewTasksServiceClient(rt.conn)
	waiting := createTask(t, tc, "t-wait", "please w1")
	action := tl.until("action.required").GetActionId()
	delegated := tl.untilTaskEvent(waiting, "task.delegated")
	quick := createTask(t, tc, "t-quick", "hello")
	if done := tl.untilTaskEvent(quick, "task.completed"); done.GetTaskCompleted().GetSummary() != "hello at once" {
		t.Fatalf("the second task completed %v", done)
	}
	respond(t, rt, action, "allow_once")
	done := tl.untilTaskEvent(waiting, "task.completed")
	task := taskAt(t, tc, waiting, done)
	at := task.GetAttempts()
	if task.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_COMPLETED || len(at) != 1 || at[0].GetStatus() != tasksv1.RunStatus_RUN_STATUS_COMPLETED ||
		at[0].GetCompletionSummary() != "wrote w1" || at[0].GetCarriedBy().GetTurnId() != delegated.GetTaskDelegated().GetTargetId() || at[0].GetLeased() {
		t.Fatalf("task = %v", task)
	}
	if b, err := os.ReadFile(filepath.Join(root, "w1.md")); err != nil || string(b) != "one" {
		t.Fatalf("w1.md = %q, %v", b, err)
	}
}

// A worker stopped while its task's turn waits leaves the run to the
// turn: another worker resumes the turn once approved, and the task
// completes as the same run (no second attempt, the write done once).
func TestATaskRunSurvivesItsWorkersStop(t *testing.T) {
	rt := startRuntimeWith(t, true)
	root := workspace(t)
	stop := rt.startStoppableWorker(t, "first", root, taskWorker)
	tl := rt.follow(t, "s1")
	tc := tasksv1.NewTasksServiceClient(rt.conn)
	id := createTask(t, tc, "t-main", "please w1")
	action := tl.until("action.required").GetActionId()
	turn := tl.untilTaskEvent(id, "task.delegated").GetTaskDelegated().GetTargetId()
	for tl.until("run.status").GetRunStatus().GetPhase() != "parked" {
	}
	stop()
	respond(t, rt, action, "allow_once")
	rt.startStoppableWorker(t, "second", root, taskWorker)
	done := tl.untilTaskEvent(id, "task.completed")
	task := taskAt(t, tc, id, done)
	if at := task.GetAttempts(); len(at) != 1 || at[0].GetStatus() != tasksv1.RunStatus_RUN_STATUS_COMPLETED || at[0].GetCompletionSummary() != "wrote w1" {
		t.Fatalf("task = %v, want one attempt, completed", task)
	}
	for _, ev := range tl.seen {
		if ev.GetTaskId() == id && (ev.GetType() == "task.failed" || ev.GetType() == "task.retrying" || ev.GetType() == "task.lost") {
			t.Fatalf("the run ended before its turn: %v", ev)
		}
	}
	if n := tl.count(turn, "tool.result"); n != 1 {
		t.Fatalf("%d tool.result, want the approved write once", n)
	}
	if b, err := os.ReadFile(filepath.Join(root, "w1.md")); err != nil || string(b) != "one" {
		t.Fatalf("w1.md = %q, %v", b, err)
	}
}

// The turn may end before its run is handed to it: the run is settled by
// the delegation then. The protocol is spoken by hand (poll, submit,
// wait for the turn's end, delegate).
func TestATurnThatEndedFirstSettlesItsRun(t *testing.T) {
	rt := startRuntimeWith(t, true)
	rt.startStoppableWorker(t, "turns", workspace(t)) // runs turns, not tasks
	tl := rt.follow(t, "s1")
	tc := tasksv1.NewTasksServiceClient(rt.conn)
	ctx := context.Background()
	id := createTask(t, tc, "t-fast", "hello")
	poll, err := tc.PollTask(ctx, &tasksv1.PollTaskRequest{WorkerId: "by-hand", Wait: durationpb.New(10 * time.Second), LeaseTtl: durationpb.New(time.Second)})
	if err != nil || poll.GetTask().GetTaskId() != id {
		t.Fatalf("PollTask = %v, %v", poll, err)
	}
	run := poll.GetRunId()
	sub, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "t-fast", Input: text("hello"),
		Metadata: map[string]string{"task_id": id, "task_run_id": run}})
	if err != nil {
		t.Fatal(err)
	}
	turn := sub.GetTurn()
	if end := tl.untilTurnEnds(turn.GetTurnId()); end.GetType() != "turn.completed" {
		t.Fatalf("the turn ended %v", end)
	}
	delegate := &tasksv1.DelegateTaskRunRequest{TaskId: id, RunId: run, LeaseToken: poll.GetLeaseToken(),
		SessionId: "s1", ThreadId: "t-fast", TurnId: turn.GetTurnId(), IdempotencyKey: "delegate:" + run}
	bad := &tasksv1.DelegateTaskRunRequest{TaskId: id, RunId: run, LeaseToken: "not-the-token", SessionId: "s1", ThreadId: "t-fast", TurnId: turn.GetTurnId()}
	if _, err := tc.DelegateTaskRun(ctx, bad); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("DelegateTaskRun with another token = %v, want FailedPrecondition (lease lost)", err)
	}
	if _, err := tc.DelegateTaskRun(ctx, &tasksv1.DelegateTaskRunRequest{TaskId: id, RunId: run, LeaseToken: poll.GetLeaseToken()}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("DelegateTaskRun without a turn = %v, want InvalidArgument", err)
	}
	if _, err := tc.DelegateTaskRun(ctx, delegate); err != nil {
		t.Fatal(err)
	}
	done := tl.untilTaskEvent(id, "task.completed")
	task := taskAt(t, tc, id, done)
	if at := task.GetAttempts(); len(at) != 1 || at[0].GetRunId() != run || at[0].GetCompletionSummary() != "hello at once" {
		t.Fatalf("task = %v", task)
	}
	if _, err := tc.CompleteTask(ctx, &tasksv1.CompleteTaskRequest{TaskId: id, RunId: run, LeaseToken: poll.GetLeaseToken(), IdempotencyKey: "complete:" + run}); err != nil {
		t.Fatalf("a repeat of the runtime's completion (its key) = %v, want its answer", err)
	}
}

// A delegated run's own report is refused, and it has no lease to lose
// any more: the runtime settles it when its turn ends (here run by a
// worker started after the hand-over).
func TestADelegatedRunIsTheRuntimesToSettle(t *testing.T) {
	rt := startRuntimeWith(t, true)
	tl := rt.follow(t, "s1")
	tc := tasksv1.NewTasksServiceClient(rt.conn)
	ctx := context.Background()
	id := createTask(t, tc, "t-held", "hello")
	poll, err := tc.PollTask(ctx, &tasksv1.PollTaskRequest{WorkerId: "by-hand", Wait: durationpb.New(10 * time.Second), LeaseTtl: durationpb.New(time.Second)})
	if err != nil || poll.GetTask().GetTaskId() != id {
		t.Fatalf("PollTask = %v, %v", poll, err)
	}
	run := poll.GetRunId()
	sub, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "t-held", Input: text("hello"),
		Metadata: map[string]string{"task_id": id, "task_run_id": run}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.DelegateTaskRun(ctx, &tasksv1.DelegateTaskRunRequest{TaskId: id, RunId: run, LeaseToken: poll.GetLeaseToken(),
		SessionId: "s1", ThreadId: "t-held", TurnId: sub.GetTurn().GetTurnId()}); err != nil {
		t.Fatal(err)
	}
	_, err = tc.FailTask(ctx, &tasksv1.FailTaskRequest{TaskId: id, RunId: run, LeaseToken: poll.GetLeaseToken(), Error: &tasksv1.TaskError{Category: "internal", Message: "no"}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("FailTask on a delegated run = %v, want FailedPrecondition", err)
	}
	// The lease was released with the hand-over: a heartbeat is refused
	// (no worker supervises the run), and the run is not lost for it.
	if _, err := tc.HeartbeatTask(ctx, &tasksv1.HeartbeatTaskRequest{TaskId: id, RunId: run, LeaseToken: poll.GetLeaseToken()}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("HeartbeatTask on a delegated run = %v, want FailedPrecondition (no lease)", err)
	}
	rt.startStoppableWorker(t, "turns", workspace(t))
	done := tl.untilTaskEvent(id, "task.completed")
	for _, ev := range tl.seen {
		if ev.GetTaskId() == id && (ev.GetType() == "task.lost" || ev.GetType() == "task.failed") {
			t.Fatalf("the delegated run ended %v before its turn", ev)
		}
	}
	if task := taskAt(t, tc, id, done); len(task.GetAttempts()) != 1 {
		t.Fatalf("task = %v", task)
	}
}

// A tasks service of an older release does not know DelegateTaskRun: the
// worker follows the turn under the run's lease and settles the run
// itself, as before.
func TestAnOlderTasksServiceGetsItsRunFollowed(t *testing.T) {
	rt := startRuntimeWith(t, true)
	rt.noDelegate.Store(true)
	rt.startStoppableWorker(t, "w", workspace(t), taskWorker)
	tl := rt.follow(t, "s1")
	tc := tasksv1.NewTasksServiceClient(rt.conn)
	id := createTask(t, tc, "t-old", "hello")
	done := tl.untilTaskEvent(id, "task.completed")
	task := taskAt(t, tc, id, done)
	if at := task.GetAttempts(); len(at) != 1 || at[0].GetCompletionSummary() != "hello at once" || at[0].GetCarriedBy() != nil {
		t.Fatalf("task = %v, want one run settled by its worker", task)
	}
	if slices.Contains(testkit.Types(tl.seen), "task.delegated") {
		t.Fatalf("the run was delegated: %v", testkit.Types(tl.seen))
	}
}

// A handed-over run that times out while its turn waits has its turn
// interrupted: the turn does not go on for a run that ended.
func TestATimedOutTaskRunInterruptsItsTurn(t *testing.T) {
	rt := startRuntimeWith(t, true)
	rt.startStoppableWorker(t, "w", workspace(t), taskWorker)
	tl := rt.follow(t, "s1")
	tc := tasksv1.NewTasksServiceClient(rt.conn)
	created, err := tc.CreateTask(context.Background(), &tasksv1.CreateTaskRequest{SessionId: "s1", ThreadId: "t-slow",
		Spec: &tasksv1.TaskSpec{Objective: "please w1", TaskKind: "agent",
			TimeoutPolicy: &tasksv1.TimeoutPolicy{RunTimeout: durationpb.New(time.Second)}, RetryPolicy: &tasksv1.RetryPolicy{MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetTask().GetTaskId()
	turn := tl.untilTaskEvent(id, "task.delegated").GetTaskDelegated().GetTargetId()
	tl.untilTaskEvent(id, "task.timed_out")
	end := tl.untilTurnEnds(turn)
	if end.GetType() != "turn.failed" || end.GetTurnFailed().GetCategory() != "interrupted" {
		t.Fatalf("the turn ended %v, want interrupted", end)
	}
}

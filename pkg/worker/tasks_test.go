package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

const taskScript = `
model: scripted
turns:
  - steps:
      - text: "Reading the README."
        tool_calls: [{name: read_file, arguments: {path: README.md}}]
      - text: "The README says hello."
`

func taskWorker(c *worker.Config) { c.Tasks = true }

// A task run is pulled by the worker (PollTask: task.started), run as a
// turn on the task's thread (every step a fact, the turn linked to the
// task run), and settled with the turn's summary (task.completed).
func TestTaskRunIsRunAsATurn(t *testing.T) {
	rt := startRuntimeWith(t, true)
	rt.startWorker(t, scripted(t, taskScript), workspace(t), taskWorker)
	tl := rt.follow(t, "s1")
	tc := tasksv1.NewTasksServiceClient(rt.conn)
	ctx := context.Background()
	created, err := tc.CreateTask(ctx, &tasksv1.CreateTaskRequest{SessionId: "s1", ThreadId: "work",
		Spec: &tasksv1.TaskSpec{Title: "README", Objective: "say what the README says", TaskKind: "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetTask().GetTaskId()
	started := tl.until("task.started")
	submitted := tl.until("turn.submitted")
	if started.GetTaskId() != id || submitted.GetThreadId() != "work" || submitted.GetTurnSubmitted().GetMetadata()["task_id"] != id ||
		submitted.GetTurnSubmitted().GetMetadata()["task_run_id"] != started.GetRunId() {
		t.Fatalf("task.started = %v\nturn.submitted = %v", started, submitted)
	}
	done := tl.until("task.completed")
	if done.GetTaskId() != id {
		t.Fatalf("task.completed = %v", done)
	}
	inOrder(t, testkit.Types(tl.seen), "task.started", "turn.submitted", "turn.started", "tool.started", "tool.result", "turn.completed", "task.completed")
	got, err := tc.GetTask(ctx, &tasksv1.GetTaskRequest{TaskId: id, MinSequence: done.GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, testkit.Types(tl.seen), "turn.submitted", "task.delegated", "task.completed")
	task := got.GetTask()
	if task.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_COMPLETED || len(task.GetAttempts()) != 1 || !strings.Contains(task.GetStatusReason()+task.GetNativeStatus(), "turn") {
		t.Fatalf("task = %v", task)
	}
}

// Cancelling a task whose turn waits for an approval interrupts the turn;
// the run settles cancelled.
func TestCancelledTaskInterruptsItsTurn(t *testing.T) {
	rt := startRuntimeWith(t, true)
	rt.startWorker(t, scripted(t, demoScript), workspace(t), taskWorker)
	tl := rt.follow(t, "s1")
	tc := tasksv1.NewTasksServiceClient(rt.conn)
	ctx := context.Background()
	created, err := tc.CreateTask(ctx, &tasksv1.CreateTaskRequest{SessionId: "s1", ThreadId: "work",
		Spec: &tasksv1.TaskSpec{Objective: "write notes", TaskKind: "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	tl.until("action.required")
	if _, err := tc.CancelTask(ctx, &tasksv1.CancelTaskRequest{TaskId: created.GetTask().GetTaskId(), Reason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	var failed, cancelled bool
	for !cancelled {
		m, err := tl.stream.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", testkit.Types(tl.seen), err)
		}
		ev := m.GetEvent()
		if ev == nil {
			continue
		}
		tl.seen = append(tl.seen, ev)
		switch ev.GetType() {
		case "turn.failed":
			failed = ev.GetTurnFailed().GetCategory() == "interrupted"
		case "task.cancelled":
			cancelled = true
		}
	}
	if !failed {
		t.Fatalf("the turn did not end interrupted: %v", testkit.Types(tl.seen))
	}
	// A turn parked on its approval ends at once; one still held by its
	// worker gets interrupt_requested (thread.updated) first.
	inOrder(t, testkit.Types(tl.seen), "task.started", "turn.submitted", "action.required", "task.cancel_requested", "turn.failed", "task.cancelled")
	// The run was handed to its turn: the control service interrupted the
	// turn on the cancel request, and the run ended with it.
	if !slices.Contains(testkit.Types(tl.seen), "task.delegated") {
		t.Fatalf("the run was not handed to its turn: %v", testkit.Types(tl.seen))
	}
	task, err := tc.GetTask(ctx, &tasksv1.GetTaskRequest{TaskId: created.GetTask().GetTaskId(), MinSequence: tl.seen[len(tl.seen)-1].GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	if at := task.GetTask().GetAttempts(); task.GetTask().GetStatus() != tasksv1.TaskStatus_TASK_STATUS_CANCELLED || len(at) != 1 ||
		at[0].GetError().GetCategory() != "cancelled" || at[0].GetCarriedBy() == nil {
		t.Fatalf("task = %v, want its one run carried by the turn, cancelled", task.GetTask())
	}
}

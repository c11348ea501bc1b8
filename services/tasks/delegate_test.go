package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/tasks"
	"github.com/agentruntime/agentruntime/services/tasks/app"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
	"github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

// noTurnEnds is a read-model store that cannot record a turn's end (its
// write fails): a process that dies before it settles a run.
type noTurnEnds struct{ projection.Store }

func (s noTurnEnds) Apply(ctx context.Context, b projection.Batch) (bool, error) {
	for _, kv := range b.Puts {
		if strings.Contains(kv.Key, ":turnend:") {
			return false, errors.New("the store is gone (test fault)")
		}
	}
	return s.Store.Apply(ctx, b)
}

// turnFacts appends what the control service records of a task run's
// turn on its thread: its submission (naming the run in its metadata) and
// its end. The tasks service reads them from the log.
func turnFacts(t *testing.T, log *eventlog.Log, turn string, ev *eventsv1.RuntimeEvent) uint64 {
	t.Helper()
	ev.TenantId, ev.SessionId, ev.ThreadId, ev.TurnId = "t1", "s1", "th", turn
	app, err := log.Append(context.Background(), eventlog.Aggregate{Tenant: "t1", Session: "s1", Kind: "thread", ID: "th"}, eventlog.Any, ev)
	if err != nil {
		t.Fatal(err)
	}
	return app[0].Sequence
}

// A run handed to its turn is not lost when the worker's lease lapses; its
// turn's end settles it, even when the service stops before it could (the
// settling resumes from the log after the restart), and only once. The
// task and its turn are in sessions of different partitions of the log.
func TestADelegatedRunSettlesAfterARestart(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.partitions = 3
	e.wrap = func(s projection.Store) projection.Store { return noTurnEnds{s} }
	p := e.start()
	c := p.client
	session := "task-session"
	for i := 0; p.log.Subjects.PartitionOf("t1", session) == p.log.Subjects.PartitionOf("t1", "s1"); i++ {
		session = fmt.Sprintf("task-session-%d", i)
	}
	created := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{SessionId: session,
		Spec: &tasksv1.TaskSpec{Objective: "o", TaskKind: "agent"}}))
	id := created.GetTask().GetTaskId()
	poll := must[*tasksv1.PollTaskResponse](t)(c.PollTask(ctx, &tasksv1.PollTaskRequest{WorkerId: "w", Wait: durationpb.New(10 * time.Second), LeaseTtl: durationpb.New(time.Second)}))
	run := poll.GetRunId()
	turnFacts(t, p.log, "turn-1", &eventsv1.RuntimeEvent{Type: events.TypeTurnSubmitted, Payload: &eventsv1.RuntimeEvent_TurnSubmitted{
		TurnSubmitted: &eventsv1.TurnSubmitted{Metadata: map[string]string{"task_id": id, "task_run_id": run}}}})
	delegate := &tasksv1.DelegateTaskRunRequest{TaskId: id, RunId: run, LeaseToken: poll.GetLeaseToken(), SessionId: "s1", ThreadId: "th", TurnId: "turn-1"}
	delegated := must[*tasksv1.DelegateTaskRunResponse](t)(c.DelegateTaskRun(ctx, delegate))
	// A repeat is harmless; another turn is refused.
	must[*tasksv1.DelegateTaskRunResponse](t)(c.DelegateTaskRun(ctx, delegate))
	other := &tasksv1.DelegateTaskRunRequest{TaskId: id, RunId: run, LeaseToken: poll.GetLeaseToken(), SessionId: "s1", ThreadId: "th", TurnId: "turn-2"}
	_, err := c.DelegateTaskRun(ctx, other)
	wantCode(t, err, codes.FailedPrecondition)
	// The lease was released: a sweep finds the run carried, not lost.
	if err := p.svc.App().SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}
	got := must[*tasksv1.GetTaskResponse](t)(c.GetTask(ctx, &tasksv1.GetTaskRequest{TaskId: id, MinSequence: delegated.GetResult().GetSequence()}))
	if at := got.GetTask().GetAttempts(); got.GetTask().GetStatus() != tasksv1.TaskStatus_TASK_STATUS_RUNNING || len(at) != 1 || at[0].GetLeased() || at[0].GetCarriedBy().GetTurnId() != "turn-1" {
		t.Fatalf("task = %v, want running, carried by turn-1", got.GetTask())
	}
	ended := turnFacts(t, p.log, "turn-1", &eventsv1.RuntimeEvent{Type: events.TypeTurnCompleted, Payload: &eventsv1.RuntimeEvent_TurnCompleted{
		TurnCompleted: &eventsv1.TurnCompleted{Summary: "done by the turn"}}})
	p.stop()

	var store projection.Store
	e.wrap = func(s projection.Store) projection.Store { store = s; return s }
	p = e.start()
	// The settler reacted to the turn's end (its checkpoint passed it):
	// the run's end is in the log; the read model then holds it.
	if _, err := projector.WaitFor(ctx, p.log, store, app.SettlerName, ended, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := projector.CaughtUp(ctx, p.log, store, readmodel.Name, readmodel.Records{Subjects: p.log.Subjects}.Filters(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	task := must[*tasksv1.GetTaskResponse](t)(p.client.GetTask(ctx, &tasksv1.GetTaskRequest{TaskId: id})).GetTask()
	if task.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_COMPLETED {
		t.Fatalf("task = %v, want completed by its turn", task)
	}
	if at := task.GetAttempts(); len(at) != 1 || at[0].GetCompletionSummary() != "done by the turn" || task.GetNativeStatus() != "turn:turn-1" {
		t.Fatalf("task = %v", task)
	}
	if end, err := readmodel.LoadTurnEnd(ctx, store, "t1", "turn-1"); err != nil || end.GetRunId() != run || end.GetTaskId() != id {
		t.Fatalf("stored end = %v, %v", end, err)
	}
}

// Three replicas, each with its own read model, all run the settler: a
// run is settled once (one attempt end in the log), whether its turn
// completed or failed (a retryable failure retried once, not twice).
func TestReplicasSettleARunOnce(t *testing.T) {
	ctx := context.Background()
	ns := natstest.Server(t)
	type rep struct {
		app   *app.App
		log   *eventlog.Log
		store projection.Store
	}
	var reps []rep
	for range 3 {
		nc := natstest.Connect(t, ns)
		rctx, cancel := context.WithCancel(ctx)
		log, err := eventlog.Open(rctx, nc, eventlog.Config{Partitions: natstest.Partitions(t)})
		if err != nil {
			t.Fatal(err)
		}
		store := projection.NewMemory()
		svc := tasks.NewWithOptions(kit.Deps{Log: log, Store: store}, tasks.Options{SweepInterval: 50 * time.Millisecond})
		done := make(chan struct{})
		go func() { _ = svc.Run(rctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done; nc.Close() })
		reps = append(reps, rep{svc.App(), log, store})
	}
	a, log := reps[0].app, reps[0].log
	for i, end := range []*eventsv1.RuntimeEvent{
		{Type: events.TypeTurnCompleted, Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: "done"}}},
		{Type: events.TypeTurnFailed, Payload: &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: &eventsv1.TurnFailed{
			Outcome: eventsv1.TurnOutcome_TURN_OUTCOME_FAILED, Category: "provider_error", Message: "down", Retryable: true}}},
	} {
		_, task, err := a.CreateTask(ctx, "t1", &tasksv1.CreateTaskRequest{SessionId: "s1", ThreadId: "th",
			Spec: &tasksv1.TaskSpec{Title: "x", RetryPolicy: &tasksv1.RetryPolicy{MaxAttempts: 3, InitialBackoff: durationpb.New(time.Hour)}}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := a.StartTask(ctx, "t1", &tasksv1.StartTaskRequest{TaskId: task.GetTaskId(), Worker: &tasksv1.WorkerRef{WorkerId: "w"}})
		if err != nil {
			t.Fatal(err)
		}
		turn := fmt.Sprintf("turn-%d", i)
		turnFacts(t, log, turn, &eventsv1.RuntimeEvent{Type: events.TypeTurnSubmitted, Payload: &eventsv1.RuntimeEvent_TurnSubmitted{
			TurnSubmitted: &eventsv1.TurnSubmitted{Metadata: map[string]string{"task_id": task.GetTaskId(), "task_run_id": st.RunID}}}})
		if _, err := a.DelegateTaskRun(ctx, "t1", &tasksv1.DelegateTaskRunRequest{TaskId: task.GetTaskId(), RunId: st.RunID, SessionId: "s1", ThreadId: "th", TurnId: turn}); err != nil {
			t.Fatal(err)
		}
		ended := turnFacts(t, log, turn, end)
		for _, r := range reps {
			if _, err := projector.WaitFor(ctx, r.log, r.store, app.SettlerName, ended, 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		var ends []string
		if _, err := log.Of("t1", "s1").Read(ctx, []string{log.Subjects.Aggregate(eventlog.Aggregate{Tenant: "t1", Session: "s1", Kind: "task", ID: task.GetTaskId()})},
			eventlog.FromStart, func(r *eventlog.Record) error {
				switch r.Event.GetType() {
				case domain.TypeAttemptCompleted, domain.TypeAttemptFailed, domain.TypeTaskCompleted, domain.TypeTaskFailed, domain.TypeTaskRetrying:
					ends = append(ends, r.Event.GetType())
				}
				return nil
			}); err != nil {
			t.Fatal(err)
		}
		want := []string{domain.TypeAttemptCompleted, domain.TypeTaskCompleted}
		if end.GetType() == events.TypeTurnFailed {
			want = []string{domain.TypeAttemptFailed, domain.TypeTaskRetrying}
		}
		if !slices.Equal(ends, want) {
			t.Fatalf("%s: the task's ends %v, want %v (settled once)", end.GetType(), ends, want)
		}
	}
}

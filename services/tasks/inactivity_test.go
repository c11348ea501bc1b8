package tasks_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/tasks"
	"github.com/agentruntime/agentruntime/services/tasks/app"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
	"github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

// clock is the service's clock, moved by the test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// A run carried by a turn, with an inactivity_timeout of 1 s, is timed
// out as its turn goes quiet, not while the turn waits for a person nor
// while its steps keep coming. Each scenario is a timeline from the run's
// start: control's facts of the turn appended at their times, and sweeps
// (SweepOnce at the service's clock, after the turn-ends projection holds
// every fact before) that find the run timed out or not, read from the
// task's facts in the log.
func TestACarriedRunsInactivityFollowsItsTurn(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := newEnv(t)
	e.opts = tasks.Options{SweepInterval: time.Hour, Now: clk.Now} // no sweep but the test's
	p := e.start()
	a, store := p.svc.App(), tasks.StoreOf(p.svc)

	type step struct {
		at    time.Duration // since the run started
		facts []*eventsv1.RuntimeEvent
		// sweep at `at`, then want the run timed out or not.
		sweep, timedOut bool
	}
	facts := func(evs ...*eventsv1.RuntimeEvent) []*eventsv1.RuntimeEvent { return evs }
	sweep := func(at time.Duration, timedOut bool) step { return step{at: at, sweep: true, timedOut: timedOut} }
	action := func(typ, id string) *eventsv1.RuntimeEvent {
		ev := &eventsv1.RuntimeEvent{Type: typ, ActionId: id}
		if typ == events.TypeActionRequired {
			ev.Payload = &eventsv1.RuntimeEvent_ActionRequired{ActionRequired: &eventsv1.ActionRequired{ActionType: "permission", Decisions: []string{"allow_once", "deny"}}}
		} else {
			ev.Payload = &eventsv1.RuntimeEvent_ActionResolved{ActionResolved: &eventsv1.ActionResolved{Outcome: eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED, Decision: "allow_once"}}
		}
		return ev
	}
	runStatus := func(phase, reason string) *eventsv1.RuntimeEvent {
		return &eventsv1.RuntimeEvent{Type: events.TypeRunStatus, Payload: &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{
			Phase: phase, Metadata: map[string]string{"reason": reason}}}}
	}
	step1 := func(typ string) *eventsv1.RuntimeEvent {
		ev := &eventsv1.RuntimeEvent{Type: typ}
		switch typ {
		case events.TypeModelCompleted:
			ev.Payload = &eventsv1.RuntimeEvent_ModelCompleted{ModelCompleted: &eventsv1.ModelCompleted{}}
		case events.TypeToolResult:
			ev.StepId, ev.ToolCallId = "step-1", "call-1"
			ev.Payload = &eventsv1.RuntimeEvent_ToolResult{ToolResult: &eventsv1.ToolResult{}}
		case events.TypeTurnStarted:
			ev.Payload = &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: "w"}}
		}
		return ev
	}
	ms := time.Millisecond

	for i, sc := range []struct {
		name  string
		steps []step
	}{
		{"two actions open in place", []step{
			{at: 200 * ms, facts: facts(action(events.TypeActionRequired, "a1"), action(events.TypeActionRequired, "a2"))},
			sweep(5*time.Second, false),
			{at: 5 * time.Second, facts: facts(action(events.TypeActionResolved, "a1"))},
			sweep(10*time.Second, false), // a2 is still open
			{at: 10 * time.Second, facts: facts(action(events.TypeActionResolved, "a2"))},
			sweep(10*time.Second+900*ms, false),
			sweep(11*time.Second+100*ms, true),
		}},
		{"parked for an answer", []step{
			{at: 200 * ms, facts: facts(action(events.TypeActionRequired, "a1"), runStatus("parked", "wait"))},
			sweep(5*time.Second, false),
			{at: 6 * time.Second, facts: facts(action(events.TypeActionResolved, "a1"))},
			sweep(8*time.Second, false), // answered, not resumed yet
			{at: 8 * time.Second, facts: facts(step1(events.TypeTurnStarted), runStatus("resumed", ""))},
			sweep(8*time.Second+900*ms, false),
			sweep(9*time.Second+100*ms, true),
		}},
		{"busy steps", []step{
			{at: 800 * ms, facts: facts(step1(events.TypeModelCompleted))},
			sweep(1500*ms, false),
			{at: 1600 * ms, facts: facts(step1(events.TypeToolResult))},
			sweep(2400*ms, false),
			{at: 2400 * ms, facts: facts(step1(events.TypeModelCompleted))},
			sweep(3100*ms, false),
			{at: 3200 * ms, facts: facts(step1(events.TypeToolResult))},
			{at: 4 * time.Second, facts: facts(step1(events.TypeModelCompleted))},
			sweep(4900*ms, false),
			sweep(5100*ms, true),
		}},
		{"parked by a stopping worker (not a wait)", []step{
			{at: 500 * ms, facts: facts(runStatus("parked", "drain"))},
			sweep(1100*ms, true),
		}},
	} {
		t0 := time.Date(2026, 1, 1, i+1, 0, 0, 0, time.UTC)
		clk.set(t0)
		id, st := startIdleBound(ctx, t, a, sc.name)
		turn := fmt.Sprintf("turn-%d", i)
		at := func(ev *eventsv1.RuntimeEvent, d time.Duration) *eventsv1.RuntimeEvent {
			ev.Timestamp = timestamppb.New(t0.Add(d))
			return ev
		}
		last := turnFacts(t, p.log, turn, at(&eventsv1.RuntimeEvent{Type: events.TypeTurnSubmitted, Payload: &eventsv1.RuntimeEvent_TurnSubmitted{
			TurnSubmitted: &eventsv1.TurnSubmitted{Metadata: map[string]string{"task_id": id, "task_run_id": st.RunID}}}}, 0))
		delegated, err := a.DelegateTaskRun(ctx, "t1", &tasksv1.DelegateTaskRunRequest{TaskId: id, RunId: st.RunID, SessionId: "s1", ThreadId: "th", TurnId: turn})
		if err != nil {
			t.Fatal(err)
		}
		// The sweeper reads the run as carried.
		if _, err := projector.WaitFor(ctx, p.log, store, readmodel.Name, delegated.Write.GetSequence(), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		// A turn that runs no task, busy alongside, is not noted.
		turnFacts(t, p.log, "other-"+turn, at(step1(events.TypeModelCompleted), 0))
		for _, s := range sc.steps {
			for _, ev := range s.facts {
				last = turnFacts(t, p.log, turn, at(ev, s.at))
			}
			if !s.sweep {
				continue
			}
			if _, err := projector.WaitFor(ctx, p.log, store, readmodel.TurnEndsName, last, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			clk.set(t0.Add(s.at))
			if err := a.SweepOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if got := timedOut(t, p.log, id); got != s.timedOut {
				t.Fatalf("%s: swept at %v: timed out %v, want %v", sc.name, s.at, got, s.timedOut)
			}
		}
		if tt, err := readmodel.LoadTaskTurn(ctx, store, "t1", "other-"+turn); err != nil || tt != nil {
			t.Fatalf("%s: a turn that runs no task is noted: %v, %v", sc.name, tt, err)
		}
		// The turn's end (control interrupts it) removes its note and
		// stores its end.
		ended := turnFacts(t, p.log, turn, at(&eventsv1.RuntimeEvent{Type: events.TypeTurnFailed, Payload: &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: &eventsv1.TurnFailed{
			Outcome: eventsv1.TurnOutcome_TURN_OUTCOME_FAILED, Category: "interrupted"}}}, time.Minute))
		if _, err := projector.WaitFor(ctx, p.log, store, readmodel.TurnEndsName, ended, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if tt, err := readmodel.LoadTaskTurn(ctx, store, "t1", turn); err != nil || tt != nil {
			t.Fatalf("%s: the note of an ended turn is kept: %v, %v", sc.name, tt, err)
		}
		if end, err := readmodel.LoadTurnEnd(ctx, store, "t1", turn); err != nil || end.GetRunId() != st.RunID {
			t.Fatalf("%s: stored end = %v, %v", sc.name, end, err)
		}
	}
}

// timedOut says whether the task's run was timed out for inactivity: its
// task.attempt.failed in the log, status timed out, the sweeper's reason.
// startIdleBound creates and starts a task of one attempt that times out
// after a second without progress.
func startIdleBound(ctx context.Context, t *testing.T, a *app.App, title string) (string, app.Started) {
	t.Helper()
	_, task, err := a.CreateTask(ctx, "t1", &tasksv1.CreateTaskRequest{SessionId: "s1", ThreadId: "th", Spec: &tasksv1.TaskSpec{Title: title,
		TimeoutPolicy: &tasksv1.TimeoutPolicy{InactivityTimeout: durationpb.New(time.Second)}, RetryPolicy: &tasksv1.RetryPolicy{MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.StartTask(ctx, "t1", &tasksv1.StartTaskRequest{TaskId: task.GetTaskId(), Worker: &tasksv1.WorkerRef{WorkerId: "w"}})
	if err != nil {
		t.Fatal(err)
	}
	return task.GetTaskId(), st
}

func timedOut(t *testing.T, log *eventlog.Log, id string) bool {
	t.Helper()
	var failed []*eventsv1.TaskAttemptFailed
	if _, err := log.Of("t1", "s1").Read(context.Background(), []string{log.Subjects.Aggregate(eventlog.Aggregate{Tenant: "t1", Session: "s1", Kind: "task", ID: id})},
		eventlog.FromStart, func(r *eventlog.Record) error {
			if r.Event.GetType() == domain.TypeAttemptFailed {
				failed = append(failed, r.Event.GetTaskAttemptFailed())
			}
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	switch {
	case len(failed) == 0:
		return false
	case len(failed) > 1 || failed[0].GetStatus() != tasksv1.RunStatus_RUN_STATUS_TIMED_OUT || failed[0].GetError().GetMessage() != "no progress for 1s":
		t.Fatalf("the run's ends: %v, want one inactivity timeout", failed)
	}
	return true
}

// gatedTurnEnds is a read-model store whose turn-ends projection applies
// nothing while its gate is shut, and that says when someone waits for
// that projection: a read model lagging the log.
type gatedTurnEnds struct {
	projection.Store
	mu      sync.Mutex
	shut    chan struct{} // closed: open
	waiting chan struct{} // closed at the first wait while shut
}

func (s *gatedTurnEnds) gate() (shut, waiting chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shut, s.waiting
}

func (s *gatedTurnEnds) Apply(ctx context.Context, b projection.Batch) (bool, error) {
	if strings.HasPrefix(b.Projection, readmodel.TurnEndsName) {
		shut, _ := s.gate()
		select {
		case <-shut:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return s.Store.Apply(ctx, b)
}

func (s *gatedTurnEnds) WaitFor(ctx context.Context, name string, seq uint64) (uint64, error) {
	if strings.HasPrefix(name, readmodel.TurnEndsName) {
		s.mu.Lock()
		select {
		case <-s.shut:
		default:
			select {
			case <-s.waiting:
			default:
				close(s.waiting)
			}
		}
		s.mu.Unlock()
	}
	return s.Store.WaitFor(ctx, name, seq)
}

// The sweeper does not time out a carried run on a turn-ends read model
// that lags the log: its turn's step, in the log but not yet folded, keeps
// the run. It waits for the fold of the turn's thread before it decides.
func TestASweepWaitsForTheTurnsLatestFacts(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &clock{now: t0}
	gated := &gatedTurnEnds{shut: make(chan struct{}), waiting: make(chan struct{})}
	close(gated.shut)
	e := newEnv(t)
	e.opts = tasks.Options{SweepInterval: time.Hour, Now: clk.Now}
	e.wrap = func(s projection.Store) projection.Store { gated.Store = s; return gated }
	p := e.start()
	a := p.svc.App()
	id, st := startIdleBound(ctx, t, a, "x")
	submitted := turnFacts(t, p.log, "turn-1", &eventsv1.RuntimeEvent{Type: events.TypeTurnSubmitted, Timestamp: timestamppb.New(t0),
		Payload: &eventsv1.RuntimeEvent_TurnSubmitted{TurnSubmitted: &eventsv1.TurnSubmitted{Metadata: map[string]string{"task_id": id, "task_run_id": st.RunID}}}})
	delegated, err := a.DelegateTaskRun(ctx, "t1", &tasksv1.DelegateTaskRunRequest{TaskId: id, RunId: st.RunID, SessionId: "s1", ThreadId: "th", TurnId: "turn-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := projector.WaitFor(ctx, p.log, gated, readmodel.Name, delegated.Write.GetSequence(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := projector.WaitFor(ctx, p.log, gated, readmodel.TurnEndsName, submitted, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// The read model stops folding the turn's facts; the turn takes a step.
	gated.mu.Lock()
	gated.shut = make(chan struct{})
	gated.mu.Unlock()
	shut, waiting := gated.gate()
	turnFacts(t, p.log, "turn-1", &eventsv1.RuntimeEvent{Type: events.TypeModelCompleted, Timestamp: timestamppb.New(t0.Add(5 * time.Second)),
		Payload: &eventsv1.RuntimeEvent_ModelCompleted{ModelCompleted: &eventsv1.ModelCompleted{}}})
	// 5.5 s after the run started, 0.5 s after the step: the folded note
	// says nothing since the start.
	clk.set(t0.Add(5500 * time.Millisecond))
	swept := make(chan error, 1)
	go func() { swept <- a.SweepOnce(ctx) }()
	select {
	case <-waiting: // the sweeper waits for the fold: let it fold
		close(shut)
	case err := <-swept:
		close(shut)
		t.Fatalf("the sweep decided without waiting for the turn's facts (err %v); timed out: %v", err, timedOut(t, p.log, id))
	}
	if err := <-swept; err != nil {
		t.Fatal(err)
	}
	if timedOut(t, p.log, id) {
		t.Fatal("the run was timed out on a read model that lagged its turn's step")
	}
}

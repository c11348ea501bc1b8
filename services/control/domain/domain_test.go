package domain

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Thread states every command is decided against.
func states() map[string]func() (*controlv1.ThreadRead, map[string]*controlv1.Turn) {
	// turn is a turn as the thread's fold holds it: one a worker started
	// (its turn.started folded) has a start time.
	turn := func(id, status string) *controlv1.Turn {
		tu := &controlv1.Turn{TurnId: id, SessionId: "s", ThreadId: "th", Status: turnStatusOf(status)}
		if status != "accepted" && status != "queued" && status != "steered" {
			tu.StartedAt = timestamppb.New(time.Unix(1000, 0))
		}
		return tu
	}
	// unstarted is the active turn waiting on an action a host opened
	// before any worker claimed it: waiting, as a started one would be,
	// with no start.
	unstarted := func(id string) *controlv1.Turn {
		tu := turn(id, "waiting_input")
		tu.StartedAt = nil
		return tu
	}
	return map[string]func() (*controlv1.ThreadRead, map[string]*controlv1.Turn){
		"idle": func() (*controlv1.ThreadRead, map[string]*controlv1.Turn) {
			return &controlv1.ThreadRead{SessionId: "s", ThreadId: "th", Status: controlv1.ThreadStatus_THREAD_STATUS_IDLE}, map[string]*controlv1.Turn{"t0": turn("t0", "completed")}
		},
		"accepted": func() (*controlv1.ThreadRead, map[string]*controlv1.Turn) {
			return &controlv1.ThreadRead{SessionId: "s", ThreadId: "th", Status: controlv1.ThreadStatus_THREAD_STATUS_RUNNING, ActiveTurnId: "t1"}, map[string]*controlv1.Turn{"t1": turn("t1", "accepted")}
		},
		"running+queue+action": func() (*controlv1.ThreadRead, map[string]*controlv1.Turn) {
			return &controlv1.ThreadRead{SessionId: "s", ThreadId: "th", Status: controlv1.ThreadStatus_THREAD_STATUS_WAITING_INPUT, ActiveTurnId: "t1", QueuedTurnIds: []string{"t2", "t3"},
					PendingActions: []*controlv1.Action{{ActionId: "a1", SessionId: "s", ThreadId: "th", TurnId: "t1", Status: controlv1.ActionStatus_ACTION_STATUS_PENDING, ActionType: "input"}}},
				map[string]*controlv1.Turn{"t1": turn("t1", "waiting_input"), "t2": turn("t2", "queued"), "t3": turn("t3", "queued")}
		},
		"unstarted+queue+action": func() (*controlv1.ThreadRead, map[string]*controlv1.Turn) {
			return &controlv1.ThreadRead{SessionId: "s", ThreadId: "th", Status: controlv1.ThreadStatus_THREAD_STATUS_WAITING_INPUT, ActiveTurnId: "t1", QueuedTurnIds: []string{"t2", "t3"},
					PendingActions: []*controlv1.Action{{ActionId: "a1", SessionId: "s", ThreadId: "th", TurnId: "t1", Status: controlv1.ActionStatus_ACTION_STATUS_PENDING, ActionType: "input"}}},
				map[string]*controlv1.Turn{"t1": unstarted("t1"), "t2": turn("t2", "queued"), "t3": turn("t3", "queued")}
		},
		"closed": func() (*controlv1.ThreadRead, map[string]*controlv1.Turn) {
			return &controlv1.ThreadRead{SessionId: "s", ThreadId: "th", Status: controlv1.ThreadStatus_THREAD_STATUS_CLOSED}, map[string]*controlv1.Turn{}
		},
	}
}

func types(evs []*eventsv1.RuntimeEvent) string {
	var out []string
	for _, e := range evs {
		s := e.GetType()
		if q := e.GetQueueChanged(); q != nil {
			// The delta: the turn, its position and the queue's length.
			s += fmt.Sprintf("(%s:%s@%d/%d)", q.GetChange(), q.GetTurnId(), q.GetPosition(), q.GetQueueLength())
		}
		if a := e.GetActionResolved(); a != nil {
			s += "(" + strings.TrimPrefix(a.GetOutcome().String(), "ACTION_OUTCOME_") + ")"
		}
		if f := e.GetTurnFailed(); f != nil {
			s += "(" + e.GetTurnId() + ")"
		}
		if sub := e.GetTurnSubmitted(); sub != nil {
			s += "(" + sub.GetAdmission() + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func outcome(evs []*eventsv1.RuntimeEvent, err error) string {
	var de *fault.Error
	if errors.As(err, &de) {
		return "error " + de.Reason + field(de)
	}
	if err != nil {
		return "error " + err.Error()
	}
	if len(evs) == 0 {
		return "no-op"
	}
	return types(evs)
}

func TestSubmitEveryStateAndBusyPolicy(t *testing.T) {
	policies := map[string]controlv1.BusyPolicy{
		"reject": controlv1.BusyPolicy_BUSY_POLICY_REJECT, "enqueue": controlv1.BusyPolicy_BUSY_POLICY_ENQUEUE,
		"interrupt": controlv1.BusyPolicy_BUSY_POLICY_INTERRUPT, "steer": controlv1.BusyPolicy_BUSY_POLICY_STEER,
	}
	want := map[string]string{
		"idle/reject":                      "turn.submitted(accepted)",
		"idle/enqueue":                     "turn.submitted(accepted)",
		"idle/interrupt":                   "turn.submitted(accepted)",
		"idle/steer":                       "turn.submitted(accepted)",
		"accepted/reject":                  "error THREAD_BUSY",
		"accepted/enqueue":                 "turn.submitted(queued) queue.changed(enqueued:tn@0/1)",
		"accepted/interrupt":               "turn.failed(t1) turn.submitted(accepted)",
		"accepted/steer":                   "turn.submitted(steered)",
		"running+queue+action/reject":      "error THREAD_BUSY",
		"running+queue+action/enqueue":     "turn.submitted(queued) queue.changed(enqueued:tn@2/3)",
		"running+queue+action/interrupt":   "action.resolved(CANCELLED) turn.failed(t1) turn.submitted(accepted)",
		"running+queue+action/steer":       "turn.submitted(steered)",
		"unstarted+queue+action/reject":    "error THREAD_BUSY",
		"unstarted+queue+action/enqueue":   "turn.submitted(queued) queue.changed(enqueued:tn@2/3)",
		"unstarted+queue+action/interrupt": "action.resolved(CANCELLED) turn.failed(t1) turn.submitted(accepted)",
		"unstarted+queue+action/steer":     "turn.submitted(steered)",
		"closed/reject":                    "error THREAD_CLOSED",
		"closed/enqueue":                   "error THREAD_CLOSED",
		"closed/interrupt":                 "error THREAD_CLOSED",
		"closed/steer":                     "error THREAD_CLOSED",
	}
	for sname, st := range states() {
		for pname, p := range policies {
			key := sname + "/" + pname
			t.Run(key, func(t *testing.T) {
				th, _ := st()
				got := outcome(DecideSubmit(th, Submit{TurnID: "tn", Busy: p}))
				if got != want[key] {
					t.Fatalf("got %q, want %q", got, want[key])
				}
			})
		}
	}
}

func TestSubmitGuardsTheActiveTurn(t *testing.T) {
	for sname, st := range states() {
		th, _ := st()
		_, err := DecideSubmit(th, Submit{TurnID: "tn", ExpectedActiveTurnID: "t1"})
		wantErr := th.ActiveTurnId != "t1" || th.Status == controlv1.ThreadStatus_THREAD_STATUS_CLOSED
		if (err != nil) != wantErr {
			t.Errorf("%s: expected active t1: %v", sname, err)
		}
	}
}

func TestInterruptEveryState(t *testing.T) {
	cases := []struct {
		state, target string
		cancelQueue   bool
		want          string
	}{
		{"idle", "", false, "no-op"},
		{"idle", "t0", false, "no-op"},
		{"accepted", "t1", false, "turn.failed(t1)"},
		{"accepted", "t1", true, "turn.failed(t1)"},
		{"running+queue+action", "t1", false, "thread.updated action.resolved(CANCELLED)"},
		{"running+queue+action", "t1", true, "thread.updated queue.changed(removed:t2@0/1) queue.changed(removed:t3@0/0) action.resolved(CANCELLED)"},
		{"running+queue+action", "t3", false, "queue.changed(removed:t3@1/1)"},
		// No worker started it, so none would report its end: it ends now
		// (an action pending does not make it running).
		{"unstarted+queue+action", "t1", false, "action.resolved(CANCELLED) turn.failed(t1) queue.changed(dequeued:t2@0/1)"},
		{"unstarted+queue+action", "t1", true, "queue.changed(removed:t2@0/1) queue.changed(removed:t3@0/0) action.resolved(CANCELLED) turn.failed(t1)"},
		{"closed", "", false, "no-op"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/cancelQueue=%v", c.state, c.target, c.cancelQueue), func(t *testing.T) {
			th, turns := states()[c.state]()
			var target *controlv1.Turn
			if c.target != "" {
				target = turns[c.target]
			}
			got := outcome(DecideInterrupt(th, target, Interrupt{TurnID: c.target, CancelQueue: c.cancelQueue}))
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestAcceptedTurnInterruptAdvancesTheQueue(t *testing.T) {
	th := &controlv1.ThreadRead{SessionId: "s", ThreadId: "th", ActiveTurnId: "t1", QueuedTurnIds: []string{"t2"}}
	got := outcome(DecideInterrupt(th, &controlv1.Turn{TurnId: "t1", Status: controlv1.TurnStatus_TURN_STATUS_ACCEPTED}, Interrupt{}))
	if got != "turn.failed(t1) queue.changed(dequeued:t2@0/0)" {
		t.Fatalf("got %q", got)
	}
}

// A turn no worker holds ends when interrupted whatever its status says:
// one left interrupting by an earlier interrupt (which took a pending
// action for a worker) ends on the next one, one whose run was lost ends
// (one claimed again is its new worker's to end), and an action's
// cancel_turn fallback ends a turn it kept waiting before any worker came.
func TestInterruptOfATurnNoWorkerHolds(t *testing.T) {
	th := &controlv1.ThreadRead{SessionId: "s", ThreadId: "th", ActiveTurnId: "t1", QueuedTurnIds: []string{"t2"}}
	stuck := &controlv1.Turn{TurnId: "t1", SessionId: "s", ThreadId: "th", Status: controlv1.TurnStatus_TURN_STATUS_INTERRUPTING}
	if got := outcome(DecideInterrupt(th, stuck, Interrupt{TurnID: "t1"})); got != "turn.failed(t1) queue.changed(dequeued:t2@0/0)" {
		t.Errorf("interrupting, never started: got %q", got)
	}
	// Its run was lost and no claim started it again: the turn is running
	// on the thread, no worker holds it.
	lost := &controlv1.Turn{TurnId: "t1", SessionId: "s", ThreadId: "th", Status: controlv1.TurnStatus_TURN_STATUS_RUNNING, StartedAt: timestamppb.New(time.Unix(1000, 0))}
	at := &controlv1.TurnAttempts{TurnId: "t1", RetryPending: true, Attempts: []*controlv1.TurnAttempt{{Attempt: 1, RunId: "r1", Status: controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_LOST}}}
	if got := outcome(DecideInterrupt(th, lost, Interrupt{TurnID: "t1", Attempts: at})); got != "turn.failed(t1) queue.changed(dequeued:t2@0/0)" {
		t.Errorf("its run lost: got %q", got)
	}
	at.Attempts = append(at.Attempts, &controlv1.TurnAttempt{Attempt: 2, RunId: "r2", Status: controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_RUNNING})
	if got := outcome(DecideInterrupt(th, lost, Interrupt{TurnID: "t1", Attempts: at})); got != "thread.updated" {
		t.Errorf("claimed again after its run was lost: got %q, want the interrupt requested of its worker", got)
	}
	now := time.Unix(1000, 0)
	a := &controlv1.Action{ActionId: "a1", SessionId: "s", ThreadId: "th", TurnId: "t1", Status: controlv1.ActionStatus_ACTION_STATUS_PENDING,
		ActionType: "input", Decisions: []string{"x"}, DecisionOnTimeout: FallbackCancelTurn, ExpiresAt: timestamppb.New(now)}
	waiting := proto.Clone(th).(*controlv1.ThreadRead)
	waiting.PendingActions = []*controlv1.Action{a}
	tu := &controlv1.Turn{TurnId: "t1", SessionId: "s", ThreadId: "th", Status: controlv1.TurnStatus_TURN_STATUS_WAITING_INPUT}
	if got := outcome(DecideTimeoutOn(waiting, tu, nil, a, now)); got != "action.resolved(TIMED_OUT) turn.failed(t1) queue.changed(dequeued:t2@0/0)" {
		t.Errorf("cancel_turn on a turn never started: got %q", got)
	}
}

func TestQueueOpsEveryState(t *testing.T) {
	cases := map[string]string{
		"idle/remove t2":                  "error TURN_NOT_QUEUED",
		"idle/promote t2":                 "error TURN_NOT_QUEUED",
		"accepted/remove t2":              "error TURN_NOT_QUEUED",
		"accepted/promote t1":             "error TURN_NOT_QUEUED",
		"running+queue+action/remove t2":  "queue.changed(removed:t2@0/1)",
		"running+queue+action/promote t3": "queue.changed(promoted:t3@0/2)",
		"running+queue+action/promote t2": "no-op",
		"closed/remove t2":                "error TURN_NOT_QUEUED",
	}
	for key, want := range cases {
		t.Run(key, func(t *testing.T) {
			state, op, _ := strings.Cut(key, "/")
			verb, id, _ := strings.Cut(op, " ")
			th, _ := states()[state]()
			var got string
			if verb == "remove" {
				got = outcome(DecideRemoveQueued(th, id))
			} else {
				got = outcome(DecidePromoteQueued(th, id))
			}
			if got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

func TestReportEveryTurnStatus(t *testing.T) {
	ev := func(typ string) *eventsv1.RuntimeEvent { return &eventsv1.RuntimeEvent{Type: typ, TurnId: "t1"} }
	statuses := []string{"accepted", "running", "waiting_input", "interrupting", "queued", "steered", "completed", "failed", "cancelled", "timed_out"}
	for _, status := range statuses {
		for _, typ := range []string{"turn.started", "model.delta", "turn.completed", "turn.failed"} {
			t.Run(status+"/"+typ, func(t *testing.T) {
				th := &controlv1.ThreadRead{SessionId: "s", ThreadId: "th", ActiveTurnId: "t1", QueuedTurnIds: []string{"t2"}}
				turn := &controlv1.Turn{TurnId: "t1", Status: turnStatusOf(status)}
				got, err := DecideReport(th, turn, []*eventsv1.RuntimeEvent{ev(typ)})
				terminal := Terminal(turnStatusOf(status))
				var want bool // allowed?
				switch typ {
				case "turn.started":
					want = status == "accepted"
				case "model.delta":
					want = !terminal
				default:
					want = !terminal && status != "queued" && status != "steered"
				}
				if (err == nil) != want {
					t.Fatalf("allowed=%v (err %v), want allowed=%v", err == nil, err, want)
				}
				if err == nil && (typ == "turn.completed" || typ == "turn.failed") && types(got) != typ+" queue.changed(dequeued:t2@0/0)" && types(got) != typ+"(t1) queue.changed(dequeued:t2@0/0)" {
					t.Fatalf("ending the active turn: %s", types(got))
				}
			})
		}
	}
}

func TestActions(t *testing.T) {
	now := time.Unix(1000, 0)
	live := &controlv1.Turn{TurnId: "t1", SessionId: "s", ThreadId: "th", Status: controlv1.TurnStatus_TURN_STATUS_RUNNING}
	if _, err := DecideRequestAction(&controlv1.Turn{TurnId: "t1", Status: controlv1.TurnStatus_TURN_STATUS_COMPLETED}, RequestAction{ActionID: "a", Decisions: []string{"x"}}); err == nil {
		t.Error("action on an ended turn accepted")
	}
	if _, err := DecideRequestAction(live, RequestAction{ActionID: "a", Decisions: []string{"x"}, Timeout: time.Second}); err == nil {
		t.Error("timeout without a timeout decision accepted")
	}
	evs, err := DecideRequestAction(live, RequestAction{ActionID: "a", Decisions: []string{"x", "y"}, Timeout: time.Minute, DecisionOnTimeout: "y", Now: now})
	if err != nil || !evs[0].GetActionRequired().GetExpiresAt().AsTime().Equal(now.Add(time.Minute)) {
		t.Fatalf("request: %v %v", evs, err)
	}
	pending := &controlv1.Action{ActionId: "a", Status: controlv1.ActionStatus_ACTION_STATUS_PENDING, Decisions: []string{"x", "y"}, DecisionOnTimeout: "y", ExpiresAt: timestamppb.New(now.Add(time.Minute))}
	for _, c := range []struct {
		action   *controlv1.Action
		decision string
		schema   error
		want     string
	}{
		{pending, "x", nil, "action.resolved(RESOLVED)"},
		{pending, "z", nil, "error decision"},
		{&controlv1.Action{ActionId: "a", Status: controlv1.ActionStatus_ACTION_STATUS_PENDING, Decisions: []string{"x"}, JsonSchema: "{}"}, "x", errors.New("bad"), "error payload_json"},
		{&controlv1.Action{ActionId: "a", Status: controlv1.ActionStatus_ACTION_STATUS_RESOLVED, Decisions: []string{"x"}}, "x", nil, "no-op"},
		{&controlv1.Action{ActionId: "a", Status: controlv1.ActionStatus_ACTION_STATUS_TIMED_OUT, Decisions: []string{"x"}}, "x", nil, "no-op"},
		{&controlv1.Action{ActionId: "a", Status: controlv1.ActionStatus_ACTION_STATUS_CANCELLED, Decisions: []string{"x"}}, "x", nil, "no-op"},
	} {
		if got := outcome(DecideRespond(c.action, Respond{Decision: c.decision, SchemaError: c.schema})); got != c.want {
			t.Errorf("respond %s to %s: got %q, want %q", c.decision, c.action.Status, got, c.want)
		}
	}
	if got := types(DecideTimeout(pending, now)); got != "" {
		t.Errorf("before the deadline: %s", got)
	}
	if got := DecideTimeout(pending, now.Add(time.Minute)); len(got) != 1 || got[0].GetActionResolved().GetDecision() != "y" {
		t.Errorf("at the deadline: %v", got)
	}
	if got := DecideTimeout(&controlv1.Action{Status: controlv1.ActionStatus_ACTION_STATUS_RESOLVED, ExpiresAt: pending.ExpiresAt}, now.Add(time.Hour)); len(got) != 0 {
		t.Errorf("a resolved action timed out: %v", got)
	}
}

func TestReportable(t *testing.T) {
	for _, typ := range []string{"model.delta", "tool.result", "process.output", "output.spilled", "context.compaction.completed", "artifact.changed", "run.status", "turn.completed", "subagent.completed"} {
		if !Reportable(typ) {
			t.Errorf("%s not reportable", typ)
		}
	}
	for _, typ := range []string{"session.created", "turn.submitted", "action.resolved", "queue.changed", "task.created", "routing.decided", "permission.evaluated", "subagent.spawned"} {
		if Reportable(typ) {
			t.Errorf("%s reportable by workers", typ)
		}
	}
}

func field(e *fault.Error) string {
	if len(e.Violations) == 0 {
		return ""
	}
	return e.Violations[0].Field
}

// A thread's queue is bounded: a submit that would queue beyond the bound
// is refused with ResourceExhausted QUEUE_FULL naming the bound; below it,
// and with no bound, it queues.
func TestSubmitBeyondTheQueueBoundIsExhausted(t *testing.T) {
	th := &controlv1.ThreadRead{SessionId: "s", ThreadId: "th", Status: controlv1.ThreadStatus_THREAD_STATUS_RUNNING, ActiveTurnId: "t1", QueuedTurnIds: []string{"t2", "t3"}}
	_, err := DecideSubmit(th, Submit{TurnID: "t4", MaxQueued: 2})
	e, ok := fault.As(err)
	if !ok || e.Kind != fault.KindExhausted || e.Reason != "QUEUE_FULL" || e.Metadata["max_queued_turns"] != "2" || e.Metadata["thread_id"] != "th" || !strings.Contains(e.Message, "max queued turns 2") {
		t.Fatalf("submit beyond the bound: %#v, want Exhausted QUEUE_FULL naming the bound 2", err)
	}
	for _, bound := range []int{3, 0} {
		evs, err := DecideSubmit(th, Submit{TurnID: "t4", MaxQueued: bound})
		if err != nil || len(evs) != 2 || evs[1].GetType() != "queue.changed" {
			t.Fatalf("bound %d: %v %v, want the turn queued", bound, evs, err)
		}
	}
}

// Every decision that changes the queue records a delta whose fold on the
// thread's queue gives the queue the decision meant, and says where the
// turn is and how long the queue is after it.
func TestQueueDeltasFoldToTheQueue(t *testing.T) {
	busy := func() *controlv1.ThreadRead {
		return &controlv1.ThreadRead{SessionId: "s", ThreadId: "th", Status: controlv1.ThreadStatus_THREAD_STATUS_RUNNING, ActiveTurnId: "t1", QueuedTurnIds: []string{"t2", "t3", "t4"}}
	}
	accepted := &controlv1.Turn{TurnId: "t1", SessionId: "s", ThreadId: "th", Status: controlv1.TurnStatus_TURN_STATUS_ACCEPTED}
	cases := []struct {
		name   string
		decide func(*controlv1.ThreadRead) ([]*eventsv1.RuntimeEvent, error)
		want   []string
	}{
		{"enqueue", func(th *controlv1.ThreadRead) ([]*eventsv1.RuntimeEvent, error) {
			return DecideSubmit(th, Submit{TurnID: "t5"})
		}, []string{"t2", "t3", "t4", "t5"}},
		{"remove from the middle", func(th *controlv1.ThreadRead) ([]*eventsv1.RuntimeEvent, error) { return DecideRemoveQueued(th, "t3") }, []string{"t2", "t4"}},
		{"promote the back", func(th *controlv1.ThreadRead) ([]*eventsv1.RuntimeEvent, error) { return DecidePromoteQueued(th, "t4") }, []string{"t4", "t2", "t3"}},
		{"dequeue (the active turn is interrupted before it started)", func(th *controlv1.ThreadRead) ([]*eventsv1.RuntimeEvent, error) {
			return DecideInterrupt(th, accepted, Interrupt{})
		}, []string{"t3", "t4"}},
		{"cancel the queue", func(th *controlv1.ThreadRead) ([]*eventsv1.RuntimeEvent, error) {
			return DecideInterrupt(th, accepted, Interrupt{CancelQueue: true})
		}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			th := busy()
			evs, err := c.decide(th)
			if err != nil {
				t.Fatal(err)
			}
			queue := slices.Clone(th.QueuedTurnIds)
			for _, ev := range evs {
				q := ev.GetQueueChanged()
				if q == nil {
					continue
				}
				queue = events.FoldQueue(queue, q)
				if q.QueueLength == nil || int(q.GetQueueLength()) != len(queue) {
					t.Fatalf("%s %s: queue_length %v, the folded queue has %d", q.GetChange(), q.GetTurnId(), q.QueueLength, len(queue))
				}
				if i := slices.Index(queue, q.GetTurnId()); i >= 0 && (q.Position == nil || int(q.GetPosition()) != i) {
					t.Fatalf("%s %s: position %v, the folded queue has it at %d", q.GetChange(), q.GetTurnId(), q.Position, i)
				}
			}
			if !slices.Equal(queue, c.want) {
				t.Fatalf("folded queue %v, want %v", queue, c.want)
			}
		})
	}
}

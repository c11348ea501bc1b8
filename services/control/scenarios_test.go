package control_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Spec scenario "Submit and first status": the turn is accepted, the
// subscriber sees turn.submitted first, the read model shows the active
// turn, and worker facts carry it to completed.
func TestSubmitAndFirstStatus(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	resp := h.submit(ctx, "s1", "th1", func(r *controlv1.SubmitTurnRequest) { r.SessionTitle = "first" })
	tu := resp.Turn
	if tu.Status != controlv1.TurnStatus_TURN_STATUS_ACCEPTED || tu.Admission != controlv1.TurnStatus_TURN_STATUS_ACCEPTED || tu.TurnId == "" || resp.Sequence == 0 {
		t.Fatalf("submit answered %v", resp)
	}
	if got := sub.until("turn.submitted"); got.TurnId != tu.TurnId || got.GetTurnSubmitted().GetAdmission() != "accepted" {
		t.Fatalf("subscriber saw %v", got)
	}
	th := h.threadRead(ctx, "s1", "th1", resp.Sequence)
	if th.Status != controlv1.ThreadStatus_THREAD_STATUS_RUNNING || th.ActiveTurnId != tu.TurnId || th.ActiveTurn.GetStatus() != controlv1.TurnStatus_TURN_STATUS_ACCEPTED {
		t.Fatalf("thread read %v", th)
	}
	h.report(ctx, started(tu.TurnId), delta(tu.TurnId, "Hel"), delta(tu.TurnId, "lo"))
	done := h.report(ctx, completed(tu.TurnId))
	for _, typ := range []string{"turn.started", "model.delta", "model.delta", "turn.completed"} {
		if got := sub.next().GetEvent(); got.GetType() != typ {
			t.Fatalf("subscriber saw %s, want %s", got.GetType(), typ)
		}
	}
	th = h.threadRead(ctx, "s1", "th1", done.Sequence)
	if th.Status != controlv1.ThreadStatus_THREAD_STATUS_IDLE || th.ActiveTurnId != "" || th.LastOutcome != controlv1.TurnStatus_TURN_STATUS_COMPLETED || th.LastTurnId != tu.TurnId {
		t.Fatalf("after completion: %v", th)
	}
	sess, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: "s1", MinSequence: done.Sequence})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Session.Title != "first" || sess.Session.CreatedBy != "alice" || len(sess.Threads) != 1 || len(sess.History) != 1 || sess.History[0].Status != controlv1.TurnStatus_TURN_STATUS_COMPLETED {
		t.Fatalf("session %v", sess)
	}
}

// Spec scenario "Approval gate": execution pauses on action.required and
// resumes only through RespondAction, exactly once.
func TestApprovalGate(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, started(tu.TurnId))
	schema := `{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"]}`
	ra, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{
		SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionId: "act_1", ActionType: "permission",
		Prompt: "Run rm -rf build/?", JsonSchema: schema, Decisions: []string{"allow_once", "deny"},
		ToolCallId: "call_1", StepId: "step_1",
	})
	if err != nil {
		t.Fatal(err)
	}
	th := h.threadRead(ctx, "s1", "th1", ra.Sequence)
	if th.Status != controlv1.ThreadStatus_THREAD_STATUS_WAITING_PERMISSION || len(th.PendingActions) != 1 || th.ActiveTurn.GetStatus() != controlv1.TurnStatus_TURN_STATUS_WAITING_PERMISSION {
		t.Fatalf("thread while waiting: %v", th)
	}
	// A retry of the request returns the same action and appends nothing.
	again, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionId: "act_1", ActionType: "permission", Decisions: []string{"allow_once", "deny"}})
	if err != nil || again.Action.ActionId != "act_1" || again.Sequence != ra.Sequence {
		t.Fatalf("retried request: %v %v", again, err)
	}
	head := h.heads(ctx)
	_, err = h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act_1", Decision: "maybe"})
	assertCode(t, err, codes.InvalidArgument, "decision")
	_, err = h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act_1", Decision: "allow_once", PayloadJson: `{"why":1}`})
	assertCode(t, err, codes.InvalidArgument, "payload_json")
	if now := h.heads(ctx); !slices.Equal(now, head) {
		t.Fatalf("refused responses appended: heads %d -> %d", head, now)
	}
	// Two responders at once: exactly one resolution.
	var wg sync.WaitGroup
	results := make([]*controlv1.RespondActionResponse, 2)
	for i, d := range []string{"allow_once", "deny"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act_1", Decision: d, PayloadJson: `{"reason":"ok"}`})
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	if results[0].Action.Decision != results[1].Action.Decision || results[0].AlreadyResolved == results[1].AlreadyResolved {
		t.Fatalf("two responses: %v / %v", results[0], results[1])
	}
	th = h.threadRead(ctx, "s1", "th1", max(results[0].Sequence, results[1].Sequence))
	if th.Status != controlv1.ThreadStatus_THREAD_STATUS_RUNNING || len(th.PendingActions) != 0 || th.ActiveTurn.GetStatus() != controlv1.TurnStatus_TURN_STATUS_RUNNING {
		t.Fatalf("thread after resolution: %v", th)
	}
}

func TestActionTimesOutWithItsTimeoutDecision(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"action."}, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	ra, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{
		SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionType: "input", Decisions: []string{"yes", "no"},
		Timeout: durationpb.New(100 * time.Millisecond), DecisionOnTimeout: "no",
	})
	if err != nil {
		t.Fatal(err)
	}
	actionID := ra.Action.ActionId
	sub.until("action.required")
	res := sub.until("action.resolved").GetActionResolved()
	if res.GetOutcome() != eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT || res.GetDecision() != "no" {
		t.Fatalf("timeout resolution %v", res)
	}
	// Never treated as approved: a late response gets the timeout's outcome.
	late, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: actionID, Decision: "yes"})
	if err != nil || !late.AlreadyResolved || late.Action.Status != controlv1.ActionStatus_ACTION_STATUS_TIMED_OUT || late.Action.Decision != "no" {
		t.Fatalf("late response: %v %v", late, err)
	}
}

// Spec scenario "Queue and resume", with a restart of the service between
// queueing and resuming.
func TestQueueSurvivesRestartAndAdvances(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	t1 := h.submit(ctx, "s1", "th1").Turn
	t2 := h.submit(ctx, "s1", "th1").Turn
	t3 := h.submit(ctx, "s1", "th1").Turn
	if t2.Status != controlv1.TurnStatus_TURN_STATUS_QUEUED || t3.Status != controlv1.TurnStatus_TURN_STATUS_QUEUED {
		t.Fatalf("busy thread admitted %s/%s", t2.Status, t3.Status)
	}
	pr, err := h.client.PromoteQueuedTurn(ctx, &controlv1.PromoteQueuedTurnRequest{SessionId: "s1", ThreadId: "th1", QueuedTurnId: t3.TurnId})
	if err != nil || fmt.Sprint(pr.QueuedTurnIds) != fmt.Sprint([]string{t3.TurnId, t2.TurnId}) {
		t.Fatalf("promote: %v %v", pr, err)
	}

	h.restart(false)
	ctx = acme(t)
	rs, err := h.client.ResumeThread(ctx, &controlv1.ResumeThreadRequest{SessionId: "s1", ThreadId: "th1"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rs.Thread.QueuedTurnIds) != fmt.Sprint([]string{t3.TurnId, t2.TurnId}) || rs.Thread.ActiveTurnId != t1.TurnId ||
		rs.Thread.Diagnostics["recovery.queued_turns"] != "2" {
		t.Fatalf("after restart: %v", rs.Thread)
	}
	done := h.report(ctx, started(t1.TurnId), completed(t1.TurnId))
	th := h.threadRead(ctx, "s1", "th1", done.Sequence)
	if th.ActiveTurnId != t3.TurnId || fmt.Sprint(th.QueuedTurnIds) != fmt.Sprint([]string{t2.TurnId}) {
		t.Fatalf("queue did not advance: %v", th)
	}
	rm, err := h.client.RemoveQueuedTurn(ctx, &controlv1.RemoveQueuedTurnRequest{SessionId: "s1", ThreadId: "th1", QueuedTurnId: t2.TurnId})
	if err != nil || len(rm.QueuedTurnIds) != 0 {
		t.Fatalf("remove: %v %v", rm, err)
	}
	// Rebuilt from the log alone, the read model is the same.
	h.restart(true)
	ctx = acme(t)
	th2 := h.threadRead(ctx, "s1", "th1", rm.Sequence)
	if th2.ActiveTurnId != t3.TurnId || len(th2.QueuedTurnIds) != 0 || th2.TurnCount != 3 {
		t.Fatalf("rebuilt thread %v", th2)
	}
	sess, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: "s1", MinSequence: rm.Sequence})
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]string{}
	for _, tu := range sess.History {
		statuses[tu.TurnId] = enums.Word(tu.Status)
	}
	if statuses[t1.TurnId] != "completed" || statuses[t2.TurnId] != "cancelled" || statuses[t3.TurnId] != "accepted" {
		t.Fatalf("history statuses %v", statuses)
	}
}

func TestBusyPolicies(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	active := h.submit(ctx, "s1", "th1").Turn
	_, err := h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("x"), BusyPolicy: controlv1.BusyPolicy_BUSY_POLICY_REJECT})
	assertCode(t, err, codes.FailedPrecondition, "THREAD_BUSY")
	_, err = h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("x"), ExpectedActiveTurnId: "turn_other"})
	assertCode(t, err, codes.FailedPrecondition, "ACTIVE_TURN_CHANGED")

	steer := h.submit(ctx, "s1", "th1", func(r *controlv1.SubmitTurnRequest) {
		r.BusyPolicy, r.ExpectedActiveTurnId = controlv1.BusyPolicy_BUSY_POLICY_STEER, active.TurnId
	})
	if steer.Turn.Status != controlv1.TurnStatus_TURN_STATUS_STEERED || steer.Turn.SteeredInto != active.TurnId {
		t.Fatalf("steer: %v", steer.Turn)
	}
	intr := h.submit(ctx, "s1", "th1", func(r *controlv1.SubmitTurnRequest) { r.BusyPolicy = controlv1.BusyPolicy_BUSY_POLICY_INTERRUPT })
	th := h.threadRead(ctx, "s1", "th1", intr.Sequence)
	if th.ActiveTurnId != intr.Turn.TurnId || th.LastTurnId != active.TurnId || th.LastOutcome != controlv1.TurnStatus_TURN_STATUS_CANCELLED {
		t.Fatalf("interrupt-and-run: %v", th)
	}
	// InterruptTurn on a started turn records the intent first.
	h.report(ctx, started(intr.Turn.TurnId))
	ir, err := h.client.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "th1", Reason: "user stop"})
	if err != nil || !ir.Accepted || ir.Turn.Status != controlv1.TurnStatus_TURN_STATUS_INTERRUPTING {
		t.Fatalf("interrupt: %v %v", ir, err)
	}
	// Nothing active: a no-op.
	h.report(ctx, &eventsv1.RuntimeEvent{Type: "turn.failed", TurnId: intr.Turn.TurnId, Payload: &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: &eventsv1.TurnFailed{Outcome: eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED, Category: "interrupted"}}})
	ir, err = h.client.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "th1"})
	if err != nil || ir.Accepted {
		t.Fatalf("interrupt with nothing active: %v %v", ir, err)
	}
}

func TestConcurrentIdenticalSubmitsCreateOneTurn(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	const n = 100
	var wg sync.WaitGroup
	turns := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", IdempotencyKey: "same-request", Input: text("once")})
			if err != nil {
				t.Error(err)
				return
			}
			turns[i] = resp.Turn.TurnId
		}()
	}
	wg.Wait()
	for _, id := range turns {
		if id != turns[0] {
			t.Fatalf("concurrent identical submits created %s and %s", turns[0], id)
		}
	}
	submitted := 0
	if err := h.readLog(ctx, nil, func(r *eventlog.Record) error {
		if r.Event.GetType() == "turn.submitted" {
			submitted++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if submitted != 1 {
		t.Fatalf("%d turn.submitted events for one request", submitted)
	}
}

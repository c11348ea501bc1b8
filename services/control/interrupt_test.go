package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// interruptFacts are the event types an interrupt writes or leads to.
var interruptFacts = []string{"thread.updated", "action.resolved", "turn.failed", "turn.completed", "queue.changed", "tool.failed"}

// factsUntil reads s until stop(ev) and returns what it read, one word per
// event: type, the turn it is about and what it says (outcome, change).
// It fails the test with what it read when s ends first (its deadline).
func factsUntil(t *testing.T, s *subscription, stop func(*eventsv1.RuntimeEvent) bool) []string {
	t.Helper()
	var got []string
	for {
		m, err := s.stream.Recv()
		if err != nil {
			t.Fatalf("the session's events ended (%v) after %v", err, got)
		}
		ev := m.GetEvent()
		if ev == nil {
			continue
		}
		w := ev.GetType() + ":" + ev.GetTurnId()
		switch {
		case ev.GetThreadUpdated() != nil:
			w += ":" + ev.GetThreadUpdated().GetChange()
		case ev.GetActionResolved() != nil:
			w += ":" + strings.TrimPrefix(ev.GetActionResolved().GetOutcome().String(), "ACTION_OUTCOME_")
		case ev.GetTurnFailed() != nil:
			w += ":" + strings.TrimPrefix(ev.GetTurnFailed().GetOutcome().String(), "TURN_OUTCOME_") + "/" + ev.GetTurnFailed().GetCategory()
		case ev.GetQueueChanged() != nil:
			w += ":" + ev.GetQueueChanged().GetChange()
		}
		got = append(got, w)
		if stop(ev) {
			return got
		}
	}
}

// dequeued stops factsUntil at the queue moving on to turn.
func dequeued(turn string) func(*eventsv1.RuntimeEvent) bool {
	return func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetQueueChanged().GetChange() == "dequeued" && ev.GetQueueChanged().GetTurnId() == turn
	}
}

// historyTurn finds a turn in its session's history as the read model holds it
// at seq.
func (h *harness) historyTurn(ctx context.Context, session, turn string, seq uint64) *controlv1.Turn {
	h.t.Helper()
	resp, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: session, MinSequence: seq})
	if err != nil {
		h.t.Fatalf("GetSession: %v", err)
	}
	for _, tu := range resp.GetHistory() {
		if tu.GetTurnId() == turn {
			return tu
		}
	}
	h.t.Fatalf("turn %s is not in the history of session %s", turn, session)
	return nil
}

// InterruptTurn on a thread's active turn, in each state it can be in, as
// docs/services/control.md ("Turns and the queue") says: a turn no worker
// holds (not started, with or without a pending action, its run lost, or
// parked) ends
// at once, cancelled, its actions cancelled first, and the queue moves on;
// a turn a worker runs gets interrupt_requested and its actions cancelled,
// and ends when its worker reports the end. An interrupted turn is never
// handed to a worker afterwards.
func TestInterruptEndsATurnNoWorkerHolds(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	// setup submits the interrupted turn and one queued behind it, does
	// what the case needs, and answers the claim it made (nil: none).
	cases := []struct {
		name  string
		setup func(h *harness, session, thread, turn string) *controlv1.ClaimTurnResponse
		// want are the interrupt's facts up to the queue moving on; ends,
		// when set, is what the worker reports to end a running turn.
		want []string
		ends bool
	}{
		{name: "not started", want: []string{"turn.failed:T1:CANCELLED/interrupted", "queue.changed:T2:dequeued"}},
		{name: "not started, an action pending", setup: func(h *harness, session, thread, turn string) *controlv1.ClaimTurnResponse {
			h.requestAction(ctx, session, thread, turn, "act_"+session)
			return nil
		}, want: []string{"action.resolved:T1:CANCELLED", "turn.failed:T1:CANCELLED/interrupted", "queue.changed:T2:dequeued"}},
		{name: "running, an action pending", setup: func(h *harness, session, thread, turn string) *controlv1.ClaimTurnResponse {
			c := h.claimIn(ctx, session, turn)
			h.requestAction(ctx, session, thread, turn, "act_"+session)
			return c
		}, ends: true, want: []string{"thread.updated:T1:interrupt_requested", "action.resolved:T1:CANCELLED",
			"turn.failed:T1:CANCELLED/interrupted", "queue.changed:T2:dequeued"}},
		{name: "its run lost, not claimed again", setup: func(h *harness, session, thread, turn string) *controlv1.ClaimTurnResponse {
			s := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: session, TypePrefixes: []string{"run.status"}})
			defer s.cancel()
			c := h.claim(ctx, &controlv1.ClaimTurnRequest{SessionId: session, LeaseTtl: durationpb.New(200 * time.Millisecond), Wait: durationpb.New(5 * time.Second)})
			if lost := s.until("run.status"); lost.GetRunId() != c.GetRunId() || lost.GetRunStatus().GetMetadata()["next"] != "retry" {
				h.t.Fatalf("run.status = %v, want run %s lost, next retry", lost, c.GetRunId())
			}
			return c
		}, want: []string{"turn.failed:T1:CANCELLED/interrupted", "queue.changed:T2:dequeued"}},
		{name: "parked, an action pending", setup: func(h *harness, session, thread, turn string) *controlv1.ClaimTurnResponse {
			c := h.claimIn(ctx, session, turn)
			h.requestAction(ctx, session, thread, turn, "act_"+session)
			h.park(ctx, c, "act_"+session)
			return c
		}, want: []string{"tool.failed:T1", "action.resolved:T1:CANCELLED", "turn.failed:T1:CANCELLED/interrupted", "queue.changed:T2:dequeued"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := h.as(t)
			session := "s_intr" + string(rune('a'+i))
			thread := "th_" + session
			t1 := h.submit(ctx, session, thread).Turn.TurnId
			t2 := h.submit(ctx, session, thread).Turn.TurnId
			var claim *controlv1.ClaimTurnResponse
			if c.setup != nil {
				claim = c.setup(h, session, thread, t1)
			}
			// The session's events from the interrupt on: after the last
			// position the setup's commands wrote.
			head, err := h.log.Of("acme", session).Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			s := h.subscribe(sctx, &controlv1.SubscribeEventsRequest{SessionId: session, TypePrefixes: interruptFacts,
				Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: head + 1})
			ir, err := h.client.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: session, ThreadId: thread, Reason: "user stop"})
			if err != nil || !ir.GetAccepted() {
				t.Fatalf("InterruptTurn = %v, %v", ir, err)
			}
			if c.ends {
				// A worker runs it: the interrupt is a request its
				// heartbeat answers; the turn ends when the worker says so.
				if got := enums.Word(ir.GetTurn().GetStatus()); got != "interrupting" {
					t.Fatalf("a running turn after InterruptTurn is %s, want interrupting", got)
				}
				hb, err := h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: t1, RunId: claim.GetRunId(), LeaseToken: claim.GetLeaseToken()})
				if err != nil || !hb.GetInterruptRequested() {
					t.Fatalf("heartbeat after the interrupt = %v, %v", hb, err)
				}
				f := &eventsv1.RuntimeEvent{Type: "turn.failed", TurnId: t1, RunId: claim.GetRunId(), Payload: &eventsv1.RuntimeEvent_TurnFailed{
					TurnFailed: &eventsv1.TurnFailed{Outcome: eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED, Category: "interrupted"}}}
				h.reportRun(ctx, claim, f)
			} else if got := enums.Word(ir.GetTurn().GetStatus()); got != "cancelled" {
				t.Fatalf("InterruptTurn answered the turn %s, want cancelled: no worker holds it", got)
			}
			var at uint64 // the position of the queue moving on
			got := strings.Join(factsUntil(t, s, func(ev *eventsv1.RuntimeEvent) bool {
				at = ev.GetSequence()
				return dequeued(t2)(ev)
			}), " ")
			want := strings.NewReplacer("T1", t1, "T2", t2).Replace(strings.Join(c.want, " "))
			if got != want {
				t.Fatalf("the session's events after the interrupt:\n got %s\nwant %s", got, want)
			}
			// The read model: the turn is cancelled, the next one active,
			// nothing pending.
			if tu := h.historyTurn(ctx, session, t1, at); tu.GetStatus() != controlv1.TurnStatus_TURN_STATUS_CANCELLED || tu.GetOutcomeCategory() != "interrupted" {
				t.Fatalf("the read model's turn is %s (%s), want cancelled (interrupted)", enums.Word(tu.GetStatus()), tu.GetOutcomeCategory())
			}
			th := h.threadRead(ctx, session, thread, at)
			if th.GetActiveTurnId() != t2 || th.GetLastTurnId() != t1 || th.GetLastOutcome() != controlv1.TurnStatus_TURN_STATUS_CANCELLED || len(th.GetPendingActions()) != 0 {
				t.Fatalf("thread after the interrupt: active %s, last %s %s, pending actions %v; want %s active, %s last cancelled, none pending",
					th.GetActiveTurnId(), th.GetLastTurnId(), enums.Word(th.GetLastOutcome()), th.GetPendingActions(), t2, t1)
			}
			// No worker starts it now: a claim gets the next turn and
			// then nothing; a start reported for it is refused.
			if next := h.claim(ctx, &controlv1.ClaimTurnRequest{SessionId: session, Wait: durationpb.New(5 * time.Second)}); next.GetTurn().GetTurnId() != t2 {
				t.Fatalf("claim after the interrupt got %v, want %s", next.GetTurn(), t2)
			}
			if again := h.claim(ctx, &controlv1.ClaimTurnRequest{SessionId: session}); again.GetTurn() != nil {
				t.Fatalf("claim after the interrupt got %v, want nothing", again.GetTurn())
			}
			_, err = h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{started(t1)}})
			if claim == nil {
				assertCode(t, err, codes.FailedPrecondition, "TURN_NOT_STARTABLE")
			} else {
				// A run held it: reports are fenced to that run first.
				assertCode(t, err, codes.FailedPrecondition, "")
			}
		})
	}
}

// as is the harness reporting failures to t (a subtest's).
func (h *harness) as(t *testing.T) *harness {
	c := *h
	c.t = t
	return &c
}

// requestAction opens an input action on a turn, as the control API's
// RequestAction does for a host or a worker.
func (h *harness) requestAction(ctx context.Context, session, thread, turn, action string) {
	h.t.Helper()
	if _, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: session, ThreadId: thread, TurnId: turn,
		ActionId: action, ActionType: "input", Prompt: "Which branch?", Decisions: []string{"main", "dev"}}); err != nil {
		h.t.Fatalf("RequestAction: %v", err)
	}
}

// claimIn claims turn, the session's active turn, as worker w1.
func (h *harness) claimIn(ctx context.Context, session, turn string) *controlv1.ClaimTurnResponse {
	h.t.Helper()
	c := h.claim(ctx, &controlv1.ClaimTurnRequest{SessionId: session, Wait: durationpb.New(5 * time.Second)})
	if c.GetTurn().GetTurnId() != turn {
		h.t.Fatalf("claim got %v, want %s", c.GetTurn(), turn)
	}
	return c
}

// park hands the claimed turn back while its tool call waits for action,
// as a worker does (pkg/worker/park.go): the checkpoint stored, then
// run.status "parked" naming it, the action, the step and the call.
func (h *harness) park(ctx context.Context, c *controlv1.ClaimTurnResponse, action string) {
	h.t.Helper()
	turn := c.GetTurn().GetTurnId()
	st, err := h.client.StoreOutput(ctx, &controlv1.StoreOutputRequest{TurnId: turn, ToolCallId: "checkpoint:" + c.GetRunId(),
		MediaType: "application/json", Content: []byte(`{"step":"st_1"}`)})
	if err != nil {
		h.t.Fatalf("StoreOutput: %v", err)
	}
	h.reportRun(ctx, c, &eventsv1.RuntimeEvent{Type: "run.status", TurnId: turn, RunId: c.GetRunId(), Payload: &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{
		Phase: "parked", Title: "handed back: waiting for a person", Checkpoints: []string{st.GetOutput().GetUri()},
		Metadata: map[string]string{"reason": "wait", "action_ids": action, "worker_id": "w1", "step_id": "st_1", "call_ids": "call_1"},
	}}})
}

package domain

import (
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// A turn's end on a subagent's child thread ends the subagent in the
// same decision; on any other thread it says nothing about subagents.
func TestSubagentEndsWithItsChildTurn(t *testing.T) {
	completedEv := &eventsv1.RuntimeEvent{Type: "turn.completed", TurnId: "turn1", Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: "found 3 files"}}}
	failedEv := &eventsv1.RuntimeEvent{Type: "turn.failed", TurnId: "turn1", Payload: &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: &eventsv1.TurnFailed{
		Outcome: eventsv1.TurnOutcome_TURN_OUTCOME_FAILED, Category: "provider_error", Message: "boom"}}}
	for _, tc := range []struct {
		name     string
		subagent string
		end      *eventsv1.RuntimeEvent
		want     string // the subagent fact's type, "" for none
		status   string
		summary  string
		reason   string
	}{
		{"child thread, completed", "sub1", completedEv, "subagent.completed", "completed", "found 3 files", ""},
		{"child thread, failed", "sub1", failedEv, "subagent.failed", "failed", "", "provider_error: boom"},
		{"plain thread, completed", "", completedEv, "", "", "", ""},
		{"plain thread, failed", "", failedEv, "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := &controlv1.ThreadRead{SessionId: "s1", ThreadId: "thr_sub1", ActiveTurnId: "turn1", SubagentId: tc.subagent}
			out, err := DecideReport(th, &controlv1.Turn{TurnId: "turn1", ThreadId: "thr_sub1", Status: controlv1.TurnStatus_TURN_STATUS_RUNNING}, []*eventsv1.RuntimeEvent{tc.end})
			if err != nil {
				t.Fatal(err)
			}
			var got *eventsv1.RuntimeEvent
			for _, ev := range out {
				if ev.GetSubagentId() != "" {
					got = ev
				}
			}
			if tc.want == "" {
				if got != nil {
					t.Fatalf("unexpected subagent fact %v", got)
				}
				return
			}
			p := got.GetSubagentCompleted()
			if p == nil {
				p = got.GetSubagentFailed()
			}
			if got.GetType() != tc.want || got.GetSubagentId() != "sub1" || got.GetTurnId() != "turn1" || got.GetThreadId() != "thr_sub1" ||
				p.GetStatus() != tc.status || p.GetChildThreadId() != "thr_sub1" || p.GetSummary() != tc.summary || p.GetReason() != tc.reason {
				t.Fatalf("subagent fact = %v", got)
			}
			if out[0] != tc.end {
				t.Fatalf("the turn's end comes first: %v", out)
			}
		})
	}
	// An interrupt that cancels an accepted child turn fails the subagent.
	th := &controlv1.ThreadRead{SessionId: "s1", ThreadId: "thr_sub1", ActiveTurnId: "turn1", SubagentId: "sub1"}
	out, err := DecideInterrupt(th, &controlv1.Turn{TurnId: "turn1", ThreadId: "thr_sub1", Status: controlv1.TurnStatus_TURN_STATUS_ACCEPTED}, Interrupt{TurnID: "turn1", Reason: "stop"})
	if err != nil {
		t.Fatal(err)
	}
	if last := out[len(out)-1]; last.GetType() != "subagent.failed" || last.GetSubagentFailed().GetReason() != "interrupted: stop" {
		t.Fatalf("interrupt of an accepted child turn: %v", out)
	}
}

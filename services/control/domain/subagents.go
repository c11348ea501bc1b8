package domain

import (
	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// ParentThreadRef is the refs key naming, on a subagent fact of the child
// thread, the parent's thread.
const ParentThreadRef = "parent_thread_id"

// subagentTurnEnded says what a turn's end on a subagent's child thread
// means for the subagent: a completed turn completes it (with the turn's
// summary, which is what the parent waits for), a failed or cancelled one
// fails it. It is decided with the turn's end, in the same append, so
// WaitSubagents never sees an ended child turn with a running subagent,
// whichever worker (in whichever language) ran the child's turn. Nil for
// a thread that is not a subagent's.
func subagentTurnEnded(th *controlv1.ThreadRead, end *eventsv1.RuntimeEvent) *eventsv1.RuntimeEvent {
	if th.GetSubagentId() == "" {
		return nil
	}
	scope := Scope{Session: th.GetSessionId(), Thread: th.GetThreadId(), Turn: end.GetTurnId(), Subagent: th.GetSubagentId()}
	// The parent thread is named on the fact, so a subscription to the
	// parent's thread sees its subagent's outcome (ParentThreadRef).
	refs := map[string]string{ParentThreadRef: th.GetParentThreadId()}
	if c := end.GetTurnCompleted(); end.GetType() == events.TypeTurnCompleted {
		ev := event(events.TypeSubagentCompleted, scope)
		ev.Refs = refs
		ev.Payload = &eventsv1.RuntimeEvent_SubagentCompleted{SubagentCompleted: &eventsv1.SubagentStatus{
			Status: "completed", ChildThreadId: th.GetThreadId(), Summary: c.GetSummary()}}
		return ev
	}
	f := end.GetTurnFailed()
	reason := f.GetCategory()
	if f.GetMessage() != "" {
		reason += ": " + f.GetMessage()
	}
	ev := event(events.TypeSubagentFailed, scope)
	ev.Refs = refs
	ev.Payload = &eventsv1.RuntimeEvent_SubagentFailed{SubagentFailed: &eventsv1.SubagentStatus{
		Status: "failed", ChildThreadId: th.GetThreadId(), Reason: reason}}
	return ev
}

// withSubagentEnd appends the subagent's fact after a turn's end fact.
func withSubagentEnd(th *controlv1.ThreadRead, out []*eventsv1.RuntimeEvent, end *eventsv1.RuntimeEvent) []*eventsv1.RuntimeEvent {
	if s := subagentTurnEnded(th, end); s != nil {
		return append(out, s)
	}
	return out
}

package domain

import (
	"cmp"

	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
)

// A remote subagent is an A2A peer agent the control service drives
// (docs/a2a.md, "Calling a peer"). Its facts are on its child thread,
// like a local subagent's turns: channel.peer_task.linked when the peer
// names its task, channel.peer_task.updated for each change, and
// subagent.completed|failed (with ParentThreadRef) when the peer task
// ends.

// PeerChannelID is the channel a remote subagent's peer task is on.
func PeerChannelID(subagentID string) string { return ids.Channel + "_" + subagentID }

// PeerInputActionType is the action_type of the action a peer's
// input_required opens on the parent's turn.
const PeerInputActionType = "input"

// PeerAnswer and PeerDecline are the decisions of that action, as a
// request_user_input question's (pkg/worker): answer sends the payload's
// text (a JSON string) to the peer in the same task; no_answer (or a
// timeout, or the turn's end) cancels the peer task. So
// `agentruntime respond --action ID TEXT` answers a peer too.
const (
	PeerAnswer  = "answer"
	PeerDecline = "no_answer"
)

// PeerInputSchema is the input action's payload: the answer's text (a
// JSON string), or nothing.
const PeerInputSchema = `{"type":["string","null"],"maxLength":16384}`

// PeerTask is a channel.peer_task.linked or .updated fact of s.
func PeerTask(s *controlv1.Subagent, typ string, p *eventsv1.PeerTaskFact) *eventsv1.RuntimeEvent {
	ev := event(typ, Scope{Session: s.GetSessionId(), Thread: s.GetChildThreadId(), Subagent: s.GetSubagentId(), Channel: PeerChannelID(s.GetSubagentId())})
	ev.Refs = map[string]string{ParentThreadRef: s.GetParentThreadId()}
	p.CardUrl, p.NativeProtocol = s.GetAgent(), "a2a"
	if typ == events.TypeChannelPeerTaskLinked {
		ev.Payload = &eventsv1.RuntimeEvent_ChannelPeerTaskLinked{ChannelPeerTaskLinked: p}
	} else {
		ev.Payload = &eventsv1.RuntimeEvent_ChannelPeerTaskUpdated{ChannelPeerTaskUpdated: p}
	}
	return ev
}

// PeerEnded is the subagent's end when its peer task ended in state:
// completed completes it with summary (the peer's answer), any other
// state fails it with reason (also its summary when there is no other:
// the parent reads why).
func PeerEnded(s *controlv1.Subagent, state, summary, reason string) *eventsv1.RuntimeEvent {
	scope := Scope{Session: s.GetSessionId(), Thread: s.GetChildThreadId(), Subagent: s.GetSubagentId()}
	refs := map[string]string{ParentThreadRef: s.GetParentThreadId()}
	if state == "completed" {
		ev := event(events.TypeSubagentCompleted, scope)
		ev.Refs = refs
		ev.Payload = &eventsv1.RuntimeEvent_SubagentCompleted{SubagentCompleted: &eventsv1.SubagentStatus{
			Status: "completed", ChildThreadId: s.GetChildThreadId(), Summary: summary}}
		return ev
	}
	ev := event(events.TypeSubagentFailed, scope)
	ev.Refs = refs
	ev.Payload = &eventsv1.RuntimeEvent_SubagentFailed{SubagentFailed: &eventsv1.SubagentStatus{
		Status: "failed", ChildThreadId: s.GetChildThreadId(), Reason: reason, Summary: cmp.Or(summary, reason)}}
	return ev
}

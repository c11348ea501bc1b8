package domain

import (
	"fmt"

	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// The facts control records beside its decisions: a delivery channel's
// connections, what a subagent's parent is told, tool inventories, the
// repair of a subscription older than the log, warnings mirrored onto a
// thread. The app appends them; they are built here.

// ChannelReconnected is channel.connected for a new channel, or
// channel.resumed for one the session has (known), keeping its last
// acknowledged position.
func ChannelReconnected(session, channel, peer string, lastAcked uint64, known bool) *eventsv1.RuntimeEvent {
	ev := &eventsv1.RuntimeEvent{SessionId: session, ChannelId: channel}
	fact := &eventsv1.ChannelFact{Peer: peer, LastAckedSequence: lastAcked, Reason: "reconnect"}
	if known {
		ev.Type, ev.Payload = events.TypeChannelResumed, &eventsv1.RuntimeEvent_ChannelResumed{ChannelResumed: fact}
	} else {
		ev.Type, ev.Payload = events.TypeChannelConnected, &eventsv1.RuntimeEvent_ChannelConnected{ChannelConnected: fact}
	}
	return ev
}

// ChannelDisconnected records that a channel's stream ended.
func ChannelDisconnected(session, channel string, lastAcked uint64, reason string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: events.TypeChannelDisconnected, SessionId: session, ChannelId: channel,
		Payload: &eventsv1.RuntimeEvent_ChannelDisconnected{ChannelDisconnected: &eventsv1.ChannelFact{LastAckedSequence: lastAcked, Reason: reason}}}
}

// SubagentFact is a subagent.* fact on the parent's thread (typ: input,
// closed, or a status).
func SubagentFact(s *controlv1.Subagent, typ string, p *eventsv1.SubagentStatus) *eventsv1.RuntimeEvent {
	ev := &eventsv1.RuntimeEvent{Type: typ, SessionId: s.SessionId, ThreadId: s.ParentThreadId, TurnId: s.ParentTurnId, SubagentId: s.SubagentId}
	switch typ {
	case events.TypeSubagentInput:
		ev.Payload = &eventsv1.RuntimeEvent_SubagentInput{SubagentInput: p}
	case events.TypeSubagentClosed:
		ev.Payload = &eventsv1.RuntimeEvent_SubagentClosed{SubagentClosed: p}
	default:
		ev.Payload = &eventsv1.RuntimeEvent_SubagentStatus{SubagentStatus: p}
	}
	return ev
}

// SubagentWaits is what a subagent's parent is told of the child's wait
// for a person (from the child's action.required: waiting_permission or
// waiting_input) or its end (from action.resolved: running), under an id
// derived from the child's fact so a replay appends nothing twice. child
// is the child's thread.
func SubagentWaits(ev *eventsv1.RuntimeEvent, child *controlv1.ThreadRead) *eventsv1.RuntimeEvent {
	st := &eventsv1.SubagentStatus{ChildThreadId: child.GetThreadId(), Status: "running", Reason: "action " + ev.GetActionId() + " resolved"}
	if r := ev.GetActionRequired(); r != nil {
		st.Status = "waiting_input"
		if r.GetActionType() == "permission" || r.GetActionType() == "tool_permission" {
			st.Status = "waiting_permission"
		}
		st.Reason = "action " + ev.GetActionId() + ": " + r.GetPrompt()
	}
	return &eventsv1.RuntimeEvent{
		Type: events.TypeSubagentStatus, EventId: "sst_" + ev.GetEventId(), SessionId: ev.GetSessionId(), ThreadId: child.GetParentThreadId(),
		TurnId: child.GetParentTurnId(), SubagentId: child.GetSubagentId(),
		Refs:    map[string]string{"source_event_id": ev.GetEventId()},
		Payload: &eventsv1.RuntimeEvent_SubagentStatus{SubagentStatus: st},
	}
}

// HookWarning is runtime.warning on the thread of a hook that failed open
// (hook.failed of a read-only hook), under an id derived from the hook's
// fact; nil for any other hook failure.
func HookWarning(ev *eventsv1.RuntimeEvent) *eventsv1.RuntimeEvent {
	p := ev.GetHookFailed()
	if p.GetFailMode() != eventsv1.FailMode_FAIL_MODE_OPEN || ev.GetThreadId() == "" {
		return nil
	}
	msg := p.GetWarning()
	if msg == "" {
		msg = "hook failed open: " + p.GetError()
	}
	return &eventsv1.RuntimeEvent{
		Type: events.TypeRuntimeWarning, EventId: "wrn_" + ev.GetEventId(), SessionId: ev.GetSessionId(), ThreadId: ev.GetThreadId(), TurnId: ev.GetTurnId(),
		Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{
			Code: "hook_failed_open", Message: msg,
			Details: map[string]string{"hook_id": p.GetHookId(), "hook_run_id": p.GetHookRunId(), "category": p.GetCategory().String(), "source_event_id": ev.GetEventId()},
		}},
	}
}

// ToolInventory is snapshot.updated of the tools a worker registered for a
// session (or, with no session, for the tenant), with what the worker said
// of their sources (facts: its MCP servers' states).
func ToolInventory(session, worker string, tools []*eventsv1.ToolSpec, facts map[string]string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: events.TypeSnapshotUpdated, SessionId: session,
		Payload: &eventsv1.RuntimeEvent_SnapshotUpdated{SnapshotUpdated: &eventsv1.SnapshotUpdated{Kind: "tool_inventory", WorkerId: worker, Tools: tools, Facts: facts}}}
}

// Repair is snapshot.repaired of a subscription whose cursor (requested)
// is older than the log's first sequence: the events retention removed,
// and what in the snapshot may be stale (the active turn of a thread
// snapshot, every thread of a session snapshot).
func Repair(session, thread, channel string, requested, first uint64, snap *controlv1.Snapshot) *eventsv1.RuntimeEvent {
	facts := []*eventsv1.RepairedFact{{
		Status: "unavailable", Kind: "events", FromSequence: requested, ToSequence: first - 1,
		Reason: fmt.Sprintf("removed by the log's retention (the first retained sequence is %d); the snapshot stands for them", first),
	}}
	if th := snap.GetThread(); th != nil {
		if t := th.GetActiveTurnId(); t != "" {
			facts = append(facts, &eventsv1.RepairedFact{
				Status: "stale", Kind: "turn", Id: t, FromSequence: requested, ToSequence: first - 1,
				Reason: "the turn was active during the removed range: what it streamed then (model, reasoning and tool deltas, process output) is unavailable; its state is the snapshot's",
			})
		}
	} else {
		for _, t := range snap.GetSession().GetThreadIds() {
			facts = append(facts, &eventsv1.RepairedFact{
				Status: "stale", Kind: "thread", Id: t, FromSequence: requested, ToSequence: first - 1,
				Reason: "a session snapshot does not carry thread state and the thread's removed events cannot be replayed: read it with GetThreadRead",
			})
		}
	}
	return &eventsv1.RuntimeEvent{
		Type: events.TypeSnapshotRepaired, SessionId: session, ThreadId: thread, ChannelId: channel,
		Payload: &eventsv1.RuntimeEvent_SnapshotRepaired{SnapshotRepaired: &eventsv1.SnapshotRepaired{
			RequestedSequence: requested, FirstAvailableSequence: first, SnapshotSequence: snap.GetSequence(), Facts: facts,
		}},
	}
}

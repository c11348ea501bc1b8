// Subagents and delivery channels in the control read model.

package readmodel

import (
	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

func (t *tx) subagent() {
	ev := t.ev
	key := SubagentKey(t.tenant(), ev.GetSubagentId())
	if ev.GetType() == events.TypeSubagentSpawned {
		// The children index is keyed by the parent thread: another
		// session's thread lists none of this one's subagents.
		if taken(t, key, newSubagent) || taken(t, ThreadKey(t.tenant(), ev.GetThreadId()), newThread) {
			return
		}
		p := ev.GetSubagentSpawned()
		depth := int32(0)
		if parent, ok := t.thread(ev.GetThreadId()); ok && parent.SubagentId != "" {
			if ps, ok, _ := own(t, SubagentKey(t.tenant(), parent.SubagentId), newSubagent); ok {
				depth = ps.Depth + 1
			}
		}
		s := &controlv1.Subagent{
			SubagentId: ev.GetSubagentId(), SessionId: ev.GetSessionId(), ParentThreadId: ev.GetThreadId(), ParentTurnId: ev.GetTurnId(),
			ChildThreadId: p.GetChildThreadId(), Role: p.GetRole(), Isolation: p.GetIsolation(), ModelPolicy: p.GetModelPolicy(),
			Objective: p.GetObjective(), Status: controlv1.SubagentStatus_SUBAGENT_STATUS_RUNNING, Depth: depth, Sequence: t.seq(),
			Agent: p.GetAgent(),
		}
		t.put(key, s)
		t.adds = append(t.adds, projection.IndexEntry{Index: ChildrenIndex(t.tenant(), ev.GetThreadId()), Member: s.SubagentId, Score: float64(t.seq())})
		if s.Agent != "" {
			t.adds = append(t.adds, projection.IndexEntry{Index: PeersIndex, Member: PeerMember(t.tenant(), s.SessionId, s.SubagentId), Score: t.millis()})
		}
		return
	}
	s, ok, _ := own(t, key, newSubagent)
	if !ok {
		return
	}
	p := subagentPayload(ev)
	switch ev.GetType() {
	// Closing is the parent's decision and stays until a resume: a child
	// turn that ends after it (the interrupt a close sends) is in the log
	// but does not reopen the subagent.
	case events.TypeSubagentCompleted:
		if s.Status != subagentClosed {
			s.Status = controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED
		}
	case events.TypeSubagentFailed:
		if s.Status != subagentClosed {
			s.Status = controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED
		}
	case events.TypeSubagentClosed:
		s.Status = subagentClosed
	case events.TypeSubagentStatus:
		// A waiting/running report that arrives after the child's end
		// does not reopen it; only a resume does.
		ended := s.Status == controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED || s.Status == controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED || s.Status == subagentClosed
		// The payload carries the spec's word; one this build does not
		// know changes nothing.
		if st, known := enums.Parse[controlv1.SubagentStatus](p.GetStatus()); known && (!ended || p.GetReason() == "resumed") {
			s.Status = st
		}
	}
	if p.GetSummary() != "" {
		s.Summary = p.GetSummary()
	}
	s.Sequence = t.seq()
	t.put(key, s)
	// A remote subagent that ended needs no driving; a closed one does
	// until its peer task is cancelled, unless it never had one.
	if s.Agent != "" && (s.Status == controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED || s.Status == controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED ||
		(s.Status == subagentClosed && s.PeerTaskId == "")) {
		t.removes = append(t.removes, projection.IndexEntry{Index: PeersIndex, Member: PeerMember(t.tenant(), s.SessionId, s.SubagentId)})
	}
}

// peerTask folds channel.peer_task.linked|updated into the remote
// subagent they are of: the peer's ids, its state and the input action
// open for it.
func (t *tx) peerTask() {
	ev := t.ev
	key := SubagentKey(t.tenant(), ev.GetSubagentId())
	s, ok, _ := own(t, key, newSubagent)
	if !ok || s.SessionId != ev.GetSessionId() {
		return
	}
	p := ev.GetChannelPeerTaskLinked()
	if p == nil {
		p = ev.GetChannelPeerTaskUpdated()
	}
	if p.GetTaskId() != "" {
		s.PeerTaskId = p.GetTaskId()
	}
	if p.GetContextId() != "" {
		s.PeerContextId = p.GetContextId()
	}
	if p.GetState() != "" {
		s.PeerState = p.GetState()
	}
	if p.GetInputActionId() != "" {
		s.PeerActionId = p.GetInputActionId()
	}
	if p.GetAnsweredActionId() != "" && p.GetAnsweredActionId() == s.PeerActionId {
		s.PeerActionId = ""
	}
	s.Sequence = t.seq()
	t.put(key, s)
	if s.Status == subagentClosed && ev.GetType() == events.TypeChannelPeerTaskUpdated {
		t.removes = append(t.removes, projection.IndexEntry{Index: PeersIndex, Member: PeerMember(t.tenant(), s.SessionId, s.SubagentId)})
	}
}

// subagentPayload is the SubagentStatus payload of any subagent.* class
// but spawned.
func subagentPayload(ev *eventsv1.RuntimeEvent) *eventsv1.SubagentStatus {
	for _, p := range []*eventsv1.SubagentStatus{ev.GetSubagentStatus(), ev.GetSubagentCompleted(), ev.GetSubagentFailed(),
		ev.GetSubagentClosed(), ev.GetSubagentInput(), ev.GetSubagentOutput()} {
		if p != nil {
			return p
		}
	}
	return nil
}

func newSubagent() *controlv1.Subagent { return &controlv1.Subagent{} }

func (t *tx) channel() {
	ev := t.ev
	key := ChannelKey(t.tenant(), ev.GetChannelId())
	c, ok, other := own(t, key, func() *controlv1.Channel { return &controlv1.Channel{} })
	if other {
		return
	}
	if !ok {
		c = &controlv1.Channel{ChannelId: ev.GetChannelId(), SessionId: ev.GetSessionId()}
	}
	var p *eventsv1.ChannelFact
	switch ev.GetType() {
	case events.TypeChannelConnected:
		c.Status, p = controlv1.ChannelStatus_CHANNEL_STATUS_CONNECTED, ev.GetChannelConnected()
	case events.TypeChannelResumed:
		c.Status, p = controlv1.ChannelStatus_CHANNEL_STATUS_CONNECTED, ev.GetChannelResumed()
	case events.TypeChannelDisconnected:
		c.Status, p = controlv1.ChannelStatus_CHANNEL_STATUS_DISCONNECTED, ev.GetChannelDisconnected()
	case events.TypeChannelMessage:
		p = ev.GetChannelMessage()
	}
	if p.GetPeer() != "" {
		c.Peer = p.GetPeer()
	}
	if p.GetLastAckedSequence() > c.LastAckedSequence {
		c.LastAckedSequence = p.GetLastAckedSequence()
	}
	c.Sequence = t.seq()
	t.put(key, c)
}

const subagentClosed = controlv1.SubagentStatus_SUBAGENT_STATUS_CLOSED

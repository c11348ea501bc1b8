// The thread, turn and queue facts of the control read model.

package readmodel

import (
	"slices"
	"strconv"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/events"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

func (t *tx) threadStarted() {
	ev := t.ev
	if taken(t, ThreadKey(t.tenant(), ev.GetThreadId()), newThread) {
		return
	}
	p := ev.GetThreadStarted()
	th := &controlv1.ThreadRead{
		SessionId: ev.GetSessionId(), ThreadId: ev.GetThreadId(), Status: controlv1.ThreadStatus_THREAD_STATUS_IDLE, Title: p.GetTitle(),
		ParentThreadId: p.GetParentThreadId(), ParentTurnId: p.GetParentTurnId(), SubagentId: p.GetSubagentId(),
		CreatedAt: ev.GetTimestamp(),
		Routing:   &controlv1.Summary{State: commonv1.FactState_FACT_STATE_UNKNOWN}, Permission: &controlv1.Summary{State: commonv1.FactState_FACT_STATE_UNKNOWN},
		Tasks: &controlv1.Summary{State: commonv1.FactState_FACT_STATE_NOT_APPLICABLE},
	}
	t.touchThread(th)
	if s, ok := t.session(); ok {
		if !slices.Contains(s.ThreadIds, th.ThreadId) {
			s.ThreadIds = append(s.ThreadIds, th.ThreadId)
		}
		s.UpdatedAt, s.Sequence = ev.GetTimestamp(), t.seq()
		t.put(SessionKey(t.tenant(), s.SessionId), s)
	}
}

func (t *tx) threadUpdated() {
	ev := t.ev
	th, ok := t.thread(ev.GetThreadId())
	if !ok {
		return
	}
	p := ev.GetThreadUpdated()
	switch p.GetChange() {
	case "interrupt_requested":
		if tu, ok := t.turn(p.GetTurnId()); ok && !terminal(tu.Status) {
			tu.Status = domain.TurnInterrupting
			t.touchTurn(tu)
		}
	case "resumed":
		if th.Diagnostics == nil {
			th.Diagnostics = map[string]string{}
		}
		th.Diagnostics["resumed_at_sequence"] = strconv.FormatUint(t.seq(), 10)
		for k, v := range p.GetFacts() {
			th.Diagnostics["recovery."+k] = v
		}
	case "closed":
		th.Status = domain.ThreadClosed
		t.touchThread(th)
		return
	case processTerminateRequested:
		t.processTerminateRequested()
		return
	}
	t.refreshThreadStatus(th)
	t.touchThread(th)
}

func (t *tx) turnSubmitted() {
	ev := t.ev
	// A turn of another session, or one on another session's thread, is
	// that session's: nothing of it is folded here (own).
	if taken(t, TurnKey(t.tenant(), ev.GetTurnId()), newTurn) || taken(t, ThreadKey(t.tenant(), ev.GetThreadId()), newThread) {
		return
	}
	p := ev.GetTurnSubmitted()
	tu := &controlv1.Turn{
		TurnId: ev.GetTurnId(), SessionId: ev.GetSessionId(), ThreadId: ev.GetThreadId(),
		Status: admitted(p.GetAdmission()), Admission: admitted(p.GetAdmission()), Input: p.GetInput(), Options: p.GetOptions(),
		Metadata: p.GetMetadata(), IdempotencyKey: p.GetIdempotencyKey(), SubmittedAt: ev.GetTimestamp(),
		SteeredInto: p.GetSteeredInto(), SubmittedSequence: t.seq(), TraceId: ev.GetTraceId(), SpanId: ev.GetSpanId(),
	}
	c := TurnClass(ev)
	tu.Priority, tu.FairnessKey, tu.FairnessWeight = c.Priority, c.Key, c.Weight
	t.touchTurn(tu)
	t.adds = append(t.adds, projection.IndexEntry{Index: SessionTurnsIndex(t.tenant(), tu.SessionId), Member: tu.TurnId, Score: float64(t.seq())},
		projection.IndexEntry{Index: TenantTurnsIndex(t.tenant()), Member: tu.TurnId, Score: t.millis()})
	if p.GetIdempotencyKey() != "" {
		t.puts[IdempotencyKey(t.tenant(), tu.ThreadId, p.GetIdempotencyKey())] = []byte(tu.TurnId)
	}
	if th, ok := t.thread(tu.ThreadId); ok {
		th.TurnCount++
		switch p.GetAdmission() {
		case "accepted":
			th.ActiveTurnId = tu.TurnId
		case "queued":
			th.QueuedTurnIds = append(th.QueuedTurnIds, tu.TurnId)
		}
		t.refreshThreadStatus(th)
		t.touchThread(th)
	}
	if s, ok := t.session(); ok {
		s.TurnCount++
		s.UpdatedAt, s.Sequence = ev.GetTimestamp(), t.seq()
		t.put(SessionKey(t.tenant(), s.SessionId), s)
	}
}

func (t *tx) turnEnded() {
	ev := t.ev
	tu, ok := t.turn(ev.GetTurnId())
	if !ok {
		return
	}
	tu.EndedAt = ev.GetTimestamp()
	tu.Parked, tu.ParkedStepId, tu.ParkedCallIds = false, "", nil
	if ev.GetType() == events.TypeTurnCompleted {
		tu.Status = domain.TurnCompleted
		tu.OutcomeMessage = ev.GetTurnCompleted().GetSummary()
		tu.OutcomeCategory = ev.GetTurnCompleted().GetStopReason()
	} else {
		p := ev.GetTurnFailed()
		switch p.GetOutcome() {
		case eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED:
			tu.Status = domain.TurnCancelled
		case eventsv1.TurnOutcome_TURN_OUTCOME_TIMED_OUT:
			tu.Status = domain.TurnTimedOut
		default:
			tu.Status = domain.TurnFailed
		}
		tu.OutcomeCategory, tu.OutcomeMessage = p.GetCategory(), p.GetMessage()
	}
	t.touchTurn(tu)
	th, ok := t.thread(tu.ThreadId)
	if !ok {
		return
	}
	if th.ActiveTurnId == tu.TurnId {
		th.ActiveTurnId = ""
		th.LastTurnId, th.LastOutcome = tu.TurnId, tu.Status
	}
	th.QueuedTurnIds = slices.DeleteFunc(th.QueuedTurnIds, func(id string) bool { return id == tu.TurnId })
	if tu.Status == domain.TurnFailed || tu.Status == domain.TurnTimedOut {
		t.addIncident(th, &controlv1.Incident{Type: ev.GetType(), TurnId: tu.TurnId, Category: tu.OutcomeCategory, Message: tu.OutcomeMessage, Sequence: t.seq()})
	}
	t.refreshThreadStatus(th)
	t.touchThread(th)
}

func (t *tx) queueChanged() {
	ev := t.ev
	th, ok := t.thread(ev.GetThreadId())
	if !ok {
		return
	}
	p := ev.GetQueueChanged()
	th.QueuedTurnIds = events.FoldQueue(th.QueuedTurnIds, p)
	switch p.GetChange() {
	case "dequeued":
		th.ActiveTurnId = p.GetTurnId()
		if tu, ok := t.turn(p.GetTurnId()); ok {
			tu.Status = domain.TurnAccepted
			t.touchTurn(tu)
		}
	case "removed", "cleared":
		if tu, ok := t.turn(p.GetTurnId()); ok && !terminal(tu.Status) {
			tu.Status, tu.EndedAt, tu.OutcomeCategory, tu.OutcomeMessage = domain.TurnCancelled, ev.GetTimestamp(), p.GetChange(), p.GetReason()
			t.touchTurn(tu)
		}
	}
	t.refreshThreadStatus(th)
	t.touchThread(th)
}

// refreshThreadStatus derives the thread's status from its active turn and
// pending actions: a pending permission wins over input, which wins over
// running; no active turn is idle.
func (t *tx) refreshThreadStatus(th *controlv1.ThreadRead) {
	if th.Status == domain.ThreadClosed {
		return
	}
	status := controlv1.ThreadStatus_THREAD_STATUS_IDLE
	if th.ActiveTurnId != "" {
		status = controlv1.ThreadStatus_THREAD_STATUS_RUNNING
		if tu, ok := t.turn(th.ActiveTurnId); ok && tu.Status == domain.TurnInterrupting {
			status = controlv1.ThreadStatus_THREAD_STATUS_INTERRUPTING
		}
	}
	for _, a := range th.PendingActions {
		switch waitingTurnStatus(a.ActionType) {
		case controlv1.TurnStatus_TURN_STATUS_WAITING_PERMISSION:
			status = controlv1.ThreadStatus_THREAD_STATUS_WAITING_PERMISSION
		default:
			if status != controlv1.ThreadStatus_THREAD_STATUS_WAITING_PERMISSION {
				status = controlv1.ThreadStatus_THREAD_STATUS_WAITING_INPUT
			}
		}
	}
	th.Status = status
}

// waitingTurnStatus is what a pending action of actionType makes its turn
// wait for.
func waitingTurnStatus(actionType string) controlv1.TurnStatus {
	if actionType == "permission" {
		return controlv1.TurnStatus_TURN_STATUS_WAITING_PERMISSION
	}
	return controlv1.TurnStatus_TURN_STATUS_WAITING_INPUT
}

// admitted is the status a turn.submitted's admission word gives the turn
// (accepted, queued or steered).
func admitted(admission string) controlv1.TurnStatus {
	st, _ := enums.Parse[controlv1.TurnStatus](admission)
	return st
}

package domain

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
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

// Park metadata of a run that waits for its subagents (run.status
// "parked", reason "wait"): the subagents' ids and, aligned with them, the
// unix milliseconds by which each must end. Past its deadline the runtime
// closes a subagent and interrupts its turn (the parent's wait timed out),
// whether or not any worker runs.
const (
	ParkSubagentIDs       = "subagent_ids"
	ParkSubagentDeadlines = "subagent_deadlines_ms"
)

// maxSubagentWaits bounds the subagents one park may name.
const maxSubagentWaits = 64

// SubagentWait is one subagent a parked run waits for.
type SubagentWait struct {
	ID string
	// Deadline is in unix milliseconds.
	Deadline int64
}

// ParkedSubagents reads the subagent waits of a park's metadata; an error
// names what is wrong with them.
func ParkedSubagents(md map[string]string) ([]SubagentWait, error) {
	idList, dlList := md[ParkSubagentIDs], md[ParkSubagentDeadlines]
	if idList == "" && dlList == "" {
		return nil, nil
	}
	subs, dls := strings.Split(idList, ","), strings.Split(dlList, ",")
	if len(subs) != len(dls) {
		return nil, fmt.Errorf("%d subagent ids but %d deadlines: one deadline per subagent", len(subs), len(dls))
	}
	if len(subs) > maxSubagentWaits {
		return nil, fmt.Errorf("%d subagents; a park waits for at most %d", len(subs), maxSubagentWaits)
	}
	out := make([]SubagentWait, 0, len(subs))
	for i, id := range subs {
		if err := ids.Validate(id); err != nil || !strings.HasPrefix(id, ids.Subagent+"_") {
			return nil, fmt.Errorf("subagent id %q is not a subagent's id", id)
		}
		ms, err := strconv.ParseInt(dls[i], 10, 64)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("deadline %q of subagent %s is not unix milliseconds", dls[i], id)
		}
		out = append(out, SubagentWait{ID: id, Deadline: ms})
	}
	return out, nil
}

// SubagentEndedForParent says whether a fact on a parent's thread says
// its subagent ended: subagent.closed, or the subagent.status
// "completed"/"failed" that SubagentEndedOnParent makes of the child's end.
func SubagentEndedForParent(ev *eventsv1.RuntimeEvent) bool {
	switch ev.GetType() {
	case events.TypeSubagentClosed:
		return true
	case events.TypeSubagentStatus:
		st := ev.GetSubagentStatus().GetStatus()
		return ev.GetRefs()[endedRef] != "" && (st == "completed" || st == "failed")
	}
	return false
}

// endedRef names, on the parent's subagent.status, the child's
// subagent.completed or subagent.failed it repeats.
const endedRef = "ended_event_id"

// SubagentEndedOnParent is what a subagent's parent thread is told of the
// child's end (subagent.completed or subagent.failed, on the child's
// thread): a subagent.status with the end's status and summary, under an
// id derived from the child's fact so a replay appends nothing twice. A
// parked parent resumes on it: the claim decides on the parent thread's
// own facts.
func SubagentEndedOnParent(ev *eventsv1.RuntimeEvent, child *controlv1.ThreadRead) *eventsv1.RuntimeEvent {
	var p *eventsv1.SubagentStatus
	switch ev.GetType() {
	case events.TypeSubagentCompleted:
		p = ev.GetSubagentCompleted()
	case events.TypeSubagentFailed:
		p = ev.GetSubagentFailed()
	default:
		return nil
	}
	return &eventsv1.RuntimeEvent{
		Type: events.TypeSubagentStatus, EventId: "sst_" + ev.GetEventId(), SessionId: ev.GetSessionId(), ThreadId: child.GetParentThreadId(),
		TurnId: child.GetParentTurnId(), SubagentId: child.GetSubagentId(),
		Refs: map[string]string{"source_event_id": ev.GetEventId(), endedRef: ev.GetEventId()},
		Payload: &eventsv1.RuntimeEvent_SubagentStatus{SubagentStatus: &eventsv1.SubagentStatus{
			Status: p.GetStatus(), ChildThreadId: child.GetThreadId(), Summary: p.GetSummary(), Reason: strings.TrimSuffix("ended: "+p.GetReason(), ": ")}},
	}
}

package domain

import (
	"fmt"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Open is the first use of a session or a thread by a submit: it is
// created unless the request's create policy requires an existing one.
type Open struct {
	Session, Thread string
	// Create is false when the request requires the session and thread to
	// exist already.
	Create bool
	// Title and CreatedBy of a new session.
	Title, CreatedBy string
}

// DecideOpenSession creates the session on first use (session.created), or
// refuses when it must exist; a session that exists needs nothing.
func DecideOpenSession(exists bool, o Open) ([]*eventsv1.RuntimeEvent, error) {
	if exists {
		return nil, nil
	}
	if !o.Create {
		return nil, fault.NotFoundWith("session", o.Session, "session "+o.Session+" not found (create policy: require existing)")
	}
	return []*eventsv1.RuntimeEvent{{Type: events.TypeSessionCreated, SessionId: o.Session,
		Payload: &eventsv1.RuntimeEvent_SessionCreated{SessionCreated: &eventsv1.SessionCreated{Title: o.Title, CreatedBy: o.CreatedBy}}}}, nil
}

// DecideOpenThread starts the thread on first use (thread.started), or
// refuses when it must exist; a thread that exists needs nothing.
func DecideOpenThread(exists bool, o Open) ([]*eventsv1.RuntimeEvent, error) {
	if exists {
		return nil, nil
	}
	if !o.Create {
		return nil, fault.NotFoundWith("thread", o.Thread, "thread "+o.Thread+" not found (create policy: require existing)")
	}
	return []*eventsv1.RuntimeEvent{{Type: events.TypeThreadStarted, SessionId: o.Session, ThreadId: o.Thread,
		Payload: &eventsv1.RuntimeEvent_ThreadStarted{ThreadStarted: &eventsv1.ThreadStarted{}}}}, nil
}

// DecideResumeThread records that a client resumed the thread
// (thread.updated, change "resumed") with the facts it resumes from: the
// thread's status, active turn, queue and pending actions at last, the
// thread aggregate's last position.
func DecideResumeThread(th *controlv1.ThreadRead, last uint64, resumeToken string) []*eventsv1.RuntimeEvent {
	facts := map[string]string{
		"status":          enums.Word(th.Status),
		"active_turn_id":  th.ActiveTurnId,
		"queued_turns":    fmt.Sprint(len(th.QueuedTurnIds)),
		"pending_actions": fmt.Sprint(len(th.PendingActions)),
		"last_sequence":   fmt.Sprint(last),
	}
	if resumeToken != "" {
		facts["resume_token"] = resumeToken
	}
	return []*eventsv1.RuntimeEvent{{Type: events.TypeThreadUpdated, SessionId: th.SessionId, ThreadId: th.ThreadId,
		Payload: &eventsv1.RuntimeEvent_ThreadUpdated{ThreadUpdated: &eventsv1.ThreadUpdated{Change: "resumed", Facts: facts}}}}
}

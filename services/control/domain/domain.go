// Package domain holds the control service's decisions: pure functions from
// the read model's state and a command to the events that record it, or to
// an error that says precisely why not. No I/O here; the app layer loads
// state, calls a decision and appends what it returns.
package domain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fairshare"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func invalid(field, format string, args ...any) error {
	return fault.Invalid(field, format, args...)
}

func precondition(reason, subject, format string, args ...any) error {
	return fault.Precondition(reason, subject, fmt.Sprintf(format, args...), nil)
}

// Scope is the ids an event is about.
type Scope struct {
	Session, Thread, Turn, Action, Step, ToolCall, Subagent, Channel string
}

func event(typ string, s Scope) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{
		Type: typ, SessionId: s.Session, ThreadId: s.Thread, TurnId: s.Turn, ActionId: s.Action,
		StepId: s.Step, ToolCallId: s.ToolCall, SubagentId: s.Subagent, ChannelId: s.Channel,
	}
}

// BusyPolicy names, as recorded in turn.submitted.
func busyName(p controlv1.BusyPolicy) string {
	switch p {
	case controlv1.BusyPolicy_BUSY_POLICY_REJECT:
		return "reject"
	case controlv1.BusyPolicy_BUSY_POLICY_INTERRUPT:
		return "interrupt"
	case controlv1.BusyPolicy_BUSY_POLICY_STEER:
		return "steer"
	}
	return "enqueue"
}

// Submit is a SubmitTurn on an existing thread.
type Submit struct {
	TurnID               string
	IdempotencyKey       string
	Input                []*eventsv1.InputPart
	Options, Metadata    map[string]string
	Busy                 controlv1.BusyPolicy
	ExpectedActiveTurnID string
	SubmittedBy          string
	// MaxQueued bounds the thread's queue (0: unbounded): a turn that would
	// queue beyond it is refused with ResourceExhausted QUEUE_FULL.
	MaxQueued int
	// Class is how the turn is claimed (defaults applied) and FairTag its
	// place among its priority's turns (fairshare.Queue.Tag), recorded in
	// turn.submitted.
	Class   fairshare.Class
	FairTag float64
}

// DecideSubmit admits a turn to a thread by its busy policy. pending are the
// thread's pending actions (cancelled when an interrupt displaces the
// active turn).
func DecideSubmit(th *controlv1.ThreadRead, cmd Submit) ([]*eventsv1.RuntimeEvent, error) {
	if th.Status == ThreadClosed {
		return nil, precondition(ReasonThreadClosed, "thread/"+th.ThreadId, "thread %s is closed; submit to an open thread", th.ThreadId)
	}
	if cmd.ExpectedActiveTurnID != "" && cmd.ExpectedActiveTurnID != th.ActiveTurnId {
		active := th.ActiveTurnId
		if active == "" {
			active = "none"
		}
		return nil, &fault.Error{Kind: fault.KindPrecondition, Reason: ReasonActiveTurnChanged, Subject: "thread/" + th.ThreadId,
			Message:  fmt.Sprintf("expected active turn %s, but the active turn is %s", cmd.ExpectedActiveTurnID, active),
			Metadata: map[string]string{"active_turn_id": th.ActiveTurnId}}
	}
	scope := Scope{Session: th.SessionId, Thread: th.ThreadId, Turn: cmd.TurnID}
	submitted := &eventsv1.TurnSubmitted{
		Input: cmd.Input, Options: cmd.Options, Metadata: cmd.Metadata, IdempotencyKey: cmd.IdempotencyKey,
		BusyPolicy: busyName(cmd.Busy), SubmittedBy: cmd.SubmittedBy, Admission: "accepted",
		Priority: cmd.Class.Priority, FairnessKey: cmd.Class.Key, FairnessWeight: cmd.Class.Weight, FairTag: cmd.FairTag,
	}
	sub := event(events.TypeTurnSubmitted, scope)
	sub.Payload = &eventsv1.RuntimeEvent_TurnSubmitted{TurnSubmitted: submitted}
	if th.ActiveTurnId == "" {
		return []*eventsv1.RuntimeEvent{sub}, nil
	}
	switch cmd.Busy {
	case controlv1.BusyPolicy_BUSY_POLICY_REJECT:
		return nil, &fault.Error{Kind: fault.KindPrecondition, Reason: ReasonThreadBusy, Subject: "thread/" + th.ThreadId,
			Message:  fmt.Sprintf("thread %s is busy with turn %s and the busy policy is reject; enqueue, interrupt or steer instead", th.ThreadId, th.ActiveTurnId),
			Metadata: map[string]string{"active_turn_id": th.ActiveTurnId, "busy_policy": "reject"}}
	case controlv1.BusyPolicy_BUSY_POLICY_STEER:
		submitted.Admission, submitted.SteeredInto = "steered", th.ActiveTurnId
		return []*eventsv1.RuntimeEvent{sub}, nil
	case controlv1.BusyPolicy_BUSY_POLICY_INTERRUPT:
		out := endTurn(th, th.ActiveTurnId, eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED, "interrupted", "interrupted by turn "+cmd.TurnID)
		submitted.InterruptedTurnId = th.ActiveTurnId
		return append(out, sub), nil
	default:
		n := len(th.QueuedTurnIds)
		if cmd.MaxQueued > 0 && n >= cmd.MaxQueued {
			return nil, fault.Exhausted(ReasonQueueFull,
				fmt.Sprintf("thread %s has %d queued turns, its bound (max queued turns %d); wait for the queue to drain, remove a queued turn, or interrupt or steer instead", th.ThreadId, n, cmd.MaxQueued),
				0, map[string]string{"max_queued_turns": strconv.Itoa(cmd.MaxQueued), "queued_turns": strconv.Itoa(n), "thread_id": th.ThreadId})
		}
		submitted.Admission = "queued"
		return []*eventsv1.RuntimeEvent{sub, queueChanged(th, "enqueued", cmd.TurnID, "", n, n+1)}, nil
	}
}

// endTurn ends a turn that has not finished: its pending actions are
// cancelled first (an unresolved action is never treated as approved), then
// the turn fails with the outcome.
func endTurn(th *controlv1.ThreadRead, turnID string, outcome eventsv1.TurnOutcome, category, message string) []*eventsv1.RuntimeEvent {
	var out []*eventsv1.RuntimeEvent
	for _, a := range th.PendingActions {
		if a.TurnId == turnID {
			out = append(out, resolveAction(a, eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED, "", "", "runtime"))
		}
	}
	f := event(events.TypeTurnFailed, Scope{Session: th.SessionId, Thread: th.ThreadId, Turn: turnID})
	f.Payload = &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: &eventsv1.TurnFailed{Outcome: outcome, Category: category, Message: message}}
	return withSubagentEnd(th, append(out, f), f)
}

// queueChanged records one change of the thread's queue as a delta: the
// turn, its position (after the change; where it was for a turn leaving
// the queue) and the queue's length after the change. Its size does not
// depend on the queue's (docs/services/control.md, "Turns and the queue").
func queueChanged(th *controlv1.ThreadRead, change, turnID, reason string, position, length int) *eventsv1.RuntimeEvent {
	q := event(events.TypeQueueChanged, Scope{Session: th.SessionId, Thread: th.ThreadId, Turn: turnID})
	q.Payload = &eventsv1.RuntimeEvent_QueueChanged{QueueChanged: &eventsv1.QueueChanged{
		Change: change, TurnId: turnID, Reason: reason, Position: proto.Uint32(uint32(position)), QueueLength: proto.Uint32(uint32(length)),
	}}
	return q
}

// advanceQueue makes the front of the queue active once the active turn
// ended.
func advanceQueue(th *controlv1.ThreadRead) []*eventsv1.RuntimeEvent {
	if len(th.QueuedTurnIds) == 0 {
		return nil
	}
	return []*eventsv1.RuntimeEvent{queueChanged(th, "dequeued", th.QueuedTurnIds[0], "active turn ended", 0, len(th.QueuedTurnIds)-1)}
}

// Interrupt is an InterruptTurn.
type Interrupt struct {
	TurnID      string // empty: the active turn
	Reason      string
	CancelQueue bool
	// Attempts are the target's runs as the thread's state holds them
	// (the claims fold; nil: never claimed): a turn whose last run was
	// lost waits for a claim, and no worker holds it.
	Attempts *controlv1.TurnAttempts
}

// DecideInterrupt records the intent to stop a turn. A turn no worker
// holds (unheld: not started, whether or not an action is pending on it,
// parked, or its run lost and not yet claimed again) ends at once
// (cancelled, its actions cancelled first) and the queue moves on; a
// running turn gets interrupt_requested first and ends when its worker
// stops. No active turn: nothing to do (nil, nil).
func DecideInterrupt(th *controlv1.ThreadRead, target *controlv1.Turn, cmd Interrupt) ([]*eventsv1.RuntimeEvent, error) {
	var out []*eventsv1.RuntimeEvent
	scope := Scope{Session: th.SessionId, Thread: th.ThreadId}
	if target == nil || Terminal(target.Status) {
		return nil, nil
	}
	if slices.Contains(th.QueuedTurnIds, target.TurnId) {
		return removeQueued(th, target.TurnId, "interrupted: "+cmd.Reason), nil
	}
	if target.TurnId != th.ActiveTurnId {
		return nil, nil
	}
	if cmd.CancelQueue {
		// Front first: each removal is at position 0 of what is left.
		for i, id := range th.QueuedTurnIds {
			out = append(out, queueChanged(th, "removed", id, "queue cancelled by interrupt", 0, len(th.QueuedTurnIds)-i-1))
		}
	}
	if unheld(target, cmd.Attempts) {
		// No worker holds it (not started, parked, or lost): it ends now.
		out = append(out, closeCalls(th, target.TurnId, target.ParkedStepId, target.ParkedCallIds)...)
		out = append(out, endTurn(th, target.TurnId, eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED, "interrupted", cmd.Reason)...)
		if !cmd.CancelQueue {
			out = append(out, advanceQueue(th)...)
		}
		return out, nil
	}
	scope.Turn = target.TurnId
	u := event(events.TypeThreadUpdated, scope)
	u.Payload = &eventsv1.RuntimeEvent_ThreadUpdated{ThreadUpdated: &eventsv1.ThreadUpdated{Change: "interrupt_requested", TurnId: target.TurnId, Reason: cmd.Reason}}
	out = append([]*eventsv1.RuntimeEvent{u}, out...)
	for _, a := range th.PendingActions {
		if a.TurnId == target.TurnId {
			out = append(out, resolveAction(a, eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED, "", "", "runtime"))
		}
	}
	return out, nil
}

// unheld says whether no worker holds an unfinished active turn, so that
// nobody would report its end: no claim started it (the thread recorded no
// turn.started; it may wait on an action opened before any worker came),
// its run handed it back (parked), or its last run was lost (it waits for
// a claim that would start it again). Its status alone does not say it:
// an action makes a started and an unstarted turn alike waiting, and a
// lost run leaves its turn running. A turn an earlier release's interrupt
// left interrupting in one of these states ends on the next interrupt.
func unheld(tu *controlv1.Turn, at *controlv1.TurnAttempts) bool {
	last := lastAttempt(at)
	return tu.StartedAt == nil || tu.Parked || (last != nil && last.GetStatus() == AttemptLost)
}

// removeQueued takes a queued turn out of the queue (it ends cancelled).
func removeQueued(th *controlv1.ThreadRead, turnID, reason string) []*eventsv1.RuntimeEvent {
	at := slices.Index(th.QueuedTurnIds, turnID)
	return []*eventsv1.RuntimeEvent{queueChanged(th, "removed", turnID, reason, at, len(th.QueuedTurnIds)-1)}
}

// DecideRemoveQueued removes a queued turn (it ends cancelled).
func DecideRemoveQueued(th *controlv1.ThreadRead, turnID string) ([]*eventsv1.RuntimeEvent, error) {
	if !slices.Contains(th.QueuedTurnIds, turnID) {
		return nil, precondition(ReasonTurnNotQueued, "turn/"+turnID, "turn %s is not in the queue of thread %s", turnID, th.ThreadId)
	}
	return removeQueued(th, turnID, "removed by request"), nil
}

// DecidePromoteQueued moves a queued turn to the front of the queue.
func DecidePromoteQueued(th *controlv1.ThreadRead, turnID string) ([]*eventsv1.RuntimeEvent, error) {
	if !slices.Contains(th.QueuedTurnIds, turnID) {
		return nil, precondition(ReasonTurnNotQueued, "turn/"+turnID, "turn %s is not in the queue of thread %s", turnID, th.ThreadId)
	}
	if th.QueuedTurnIds[0] == turnID {
		return nil, nil
	}
	return []*eventsv1.RuntimeEvent{queueChanged(th, "promoted", turnID, "", 0, len(th.QueuedTurnIds))}, nil
}

// workerTypes are the step facts and turn lifecycle a worker may report
// through ReportEvents.
var workerPrefixes = []string{"model.", "reasoning.", "tool.", "process.", "output.", "context.", "history."}
var workerTypes = []string{events.TypeArtifactChanged, events.TypeRunStatus, events.TypeTurnStarted, events.TypeTurnCompleted, events.TypeTurnFailed,
	events.TypeSubagentStatus, events.TypeSubagentOutput, events.TypeSubagentCompleted, events.TypeSubagentFailed}

// Reportable says whether workers may report this event type.
func Reportable(typ string) bool {
	if slices.Contains(workerTypes, typ) {
		return true
	}
	for _, p := range workerPrefixes {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return false
}

// DecidesThread says whether a reported fact changes what the thread's
// commands decide on, and so must be appended at the thread's expected
// sequence: the turn's lifecycle, subagent results, processes (the thread
// holds them for stdin and terminate), history rewrites and a run that
// parks the turn (an interrupt must see it, and it must see an interrupt).
// The other step facts (model, reasoning, tool, output, context, artifact,
// other run phases) decide nothing: they go to the turn's own subject and
// never contend with submit, interrupt or respond on the thread
// (docs/adr/0005-hot-path.md).
func DecidesThread(ev *eventsv1.RuntimeEvent) bool {
	typ := ev.GetType()
	if typ == events.TypeRunStatus {
		return ev.GetRunStatus().GetPhase() == PhaseParked
	}
	for _, p := range []string{"turn.", "subagent.", "process.", "history."} {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return false
}

// DecideReport checks reported events for one turn against its state and
// adds what follows from them: a turn that ends cancels its pending actions
// and moves the queue.
func DecideReport(th *controlv1.ThreadRead, turn *controlv1.Turn, evs []*eventsv1.RuntimeEvent) ([]*eventsv1.RuntimeEvent, error) {
	// ended: a turn.completed or turn.failed came earlier in evs.
	status, ended := turn.Status, false
	var out []*eventsv1.RuntimeEvent
	for i, ev := range evs {
		field := fmt.Sprintf("events[%d]", i)
		switch ev.GetType() {
		case events.TypeTurnStarted:
			if ended || status != TurnAccepted {
				return nil, precondition(ReasonTurnNotStartable, "turn/"+turn.TurnId, "%s: turn %s is %s; only an accepted (active, not started) turn can start", field, turn.TurnId, word(status, ended))
			}
			status = TurnRunning
		case events.TypeTurnCompleted, events.TypeTurnFailed:
			if Terminal(status) || ended {
				return nil, precondition(ReasonTurnEnded, "turn/"+turn.TurnId, "%s: turn %s already ended as %s", field, turn.TurnId, word(status, ended))
			}
			if status == TurnQueued || status == TurnSteered {
				return nil, precondition(ReasonTurnNotActive, "turn/"+turn.TurnId, "%s: turn %s is %s, not active", field, turn.TurnId, word(status, ended))
			}
			ended = true
			out = withSubagentEnd(th, append(out, ev), ev)
			for _, a := range th.PendingActions {
				if a.TurnId == turn.TurnId {
					out = append(out, resolveAction(a, eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED, "", "", "runtime"))
				}
			}
			if th.ActiveTurnId == turn.TurnId {
				out = append(out, advanceQueue(th)...)
			}
			continue
		case events.TypeRunStatus:
			// A lost run is the runtime's verdict on a lapsed lease: the
			// claims read model makes the turn claimable again on it, so a
			// worker must not be able to say it.
			if p := ev.GetRunStatus().GetPhase(); p == PhaseLost || p == PhaseRetrying || p == PhaseResumed {
				return nil, invalid(field+".run_status.phase", "the phase %q is recorded by the runtime (lease expiry, retries and resumptions), not reported by workers", p)
			}
			if Terminal(status) || ended {
				return nil, precondition(ReasonTurnEnded, "turn/"+turn.TurnId, "%s: turn %s already ended; no more step facts", field, turn.TurnId)
			}
			if ev.GetRunStatus().GetPhase() == PhaseParked {
				if err := checkPark(ev, field); err != nil {
					return nil, err
				}
				if status == TurnInterrupting {
					// Interrupted while it was handing the turn back:
					// nobody would resume it, so it ends here instead.
					ended = true
					md := ev.GetRunStatus().GetMetadata()
					out = append(out, closeCalls(th, turn.TurnId, md["step_id"], strings.Split(md["call_ids"], ","))...)
					out = append(out, endTurn(th, turn.TurnId, eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED, "interrupted",
						"interrupted while its worker handed it back")...)
					if th.ActiveTurnId == turn.TurnId {
						out = append(out, advanceQueue(th)...)
					}
					continue
				}
			}
		default:
			if Terminal(status) || ended {
				return nil, precondition(ReasonTurnEnded, "turn/"+turn.TurnId, "%s: turn %s already ended; no more step facts", field, turn.TurnId)
			}
		}
		out = append(out, ev)
	}
	return out, nil
}

// closeCalls ends the tool calls of a parked turn that waited for an
// answer (a run.status "parked" names them) when the turn ends without a
// worker: the runtime says they failed, cancelled.
func closeCalls(th *controlv1.ThreadRead, turnID, step string, calls []string) []*eventsv1.RuntimeEvent {
	if step == "" {
		return nil
	}
	var out []*eventsv1.RuntimeEvent
	for _, call := range calls {
		if call == "" {
			continue
		}
		f := event(events.TypeToolFailed, Scope{Session: th.SessionId, Thread: th.ThreadId, Turn: turnID, Step: step, ToolCall: call})
		f.Payload = &eventsv1.RuntimeEvent_ToolFailed{ToolFailed: &eventsv1.ToolFailed{
			Category: "cancelled", Message: "the turn was interrupted while the call waited for an answer"}}
		out = append(out, f)
	}
	return out
}

// checkPark holds a worker's run.status "parked" to its shape: one
// checkpoint, a stored output's uri, and a known reason.
func checkPark(ev *eventsv1.RuntimeEvent, field string) error {
	p := ev.GetRunStatus()
	cps := p.GetCheckpoints()
	if len(cps) != 1 || !strings.HasPrefix(cps[0], "object://") || len(cps[0]) > 1024 {
		return invalid(field+".run_status.checkpoints", "a parked run names exactly one checkpoint, the uri StoreOutput answered for it")
	}
	if r := p.GetMetadata()["reason"]; r != ParkWait && r != ParkDrain {
		return invalid(field+".run_status.metadata", "reason %q: a parked run says why, %q or %q", r, ParkWait, ParkDrain)
	}
	if ev.GetRunId() == "" {
		return invalid(field+".run_id", "a parked run names the run that parks")
	}
	if _, err := ParkedSubagents(p.GetMetadata()); err != nil {
		return invalid(field+".run_status.metadata", "%v", err)
	}
	return nil
}

// Why a run parks (run.status "parked" metadata "reason").
const (
	// ParkWait: the turn waits for a person (its pending actions).
	ParkWait = "wait"
	// ParkDrain: the worker is stopping; the turn is claimable at once.
	ParkDrain = "drain"
)

// word is a turn status in messages: the spec's word, or "ended" for a turn
// an earlier event of the same report ended.
func word(status controlv1.TurnStatus, ended bool) string {
	if ended {
		return "ended"
	}
	return enums.Word(status)
}

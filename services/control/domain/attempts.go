package domain

import (
	"fmt"
	"strconv"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Attempt budget of a turn: how many claims (runs) may work on it before a
// lost run fails it. A worker that dies mid-turn is the common reason to
// try again; a turn that keeps killing its workers must not loop forever.
const (
	DefaultMaxAttempts = 3
	MaxAttemptsLimit   = 10
	// MaxAttemptsOption is the turn option (SubmitTurn options) that sets
	// the budget of one turn.
	MaxAttemptsOption = "max_attempts"
)

// Phases of the run.status facts the runtime writes about attempts.
const (
	// PhaseLost: the run's lease lapsed; nobody can prove its worker is
	// still alive (spec: completion semantics, "lost").
	PhaseLost = "lost"
	// PhaseRetrying: a new attempt started after a lost run.
	PhaseRetrying = "retrying"
	// PhaseParked: the worker handed the turn back (reported by the
	// worker, decided on the thread): to wait for a person without
	// holding a slot, or because it is stopping. checkpoints[0] names the
	// transcript it stopped with; metadata "reason" says why ("wait",
	// "drain").
	PhaseParked = "parked"
	// PhaseResumed: a worker claimed a parked turn and continues it from
	// its checkpoint.
	PhaseResumed = "resumed"
)

// What follows a lost run (run.status metadata "next").
const (
	NextRetry  = "retry"
	NextFail   = "fail"
	NextCancel = "cancel"
)

// MaxAttempts is a turn's attempt budget: its max_attempts option when it
// is an integer in 1..MaxAttemptsLimit, otherwise def. source says which,
// so the loss fact can tell the reader why the budget is what it is.
func MaxAttempts(tu *controlv1.Turn, def int) (n int, source string) {
	raw, ok := tu.GetOptions()[MaxAttemptsOption]
	if !ok {
		return def, "default"
	}
	v, err := strconv.Atoi(raw)
	if err != nil || v < 1 || v > MaxAttemptsLimit {
		return def, fmt.Sprintf("default (option %s=%q is not an integer in 1..%d)", MaxAttemptsOption, raw, MaxAttemptsLimit)
	}
	return v, "option " + MaxAttemptsOption
}

// lastAttempt is the newest attempt of a turn, nil when none.
func lastAttempt(at *controlv1.TurnAttempts) *controlv1.TurnAttempt {
	if n := len(at.GetAttempts()); n > 0 {
		return at.GetAttempts()[n-1]
	}
	return nil
}

// lostRuns counts a turn's runs that were lost.
func lostRuns(at *controlv1.TurnAttempts) int {
	n := 0
	for _, a := range at.GetAttempts() {
		if a.GetStatus() == AttemptLost {
			n++
		}
	}
	return n
}

// Claim is a worker's claim of a turn: the run it starts.
type Claim struct {
	RunID, WorkerID string
}

// DecideClaim starts a run of a turn for a worker's claim: the first
// attempt of an accepted (active, not started) turn, the next attempt of a
// turn whose last run was lost with budget left, or the resumption of a
// parked turn whose waits were answered. at is the claims read
// model of the turn (nil: never claimed). Anything else is not claimable:
// a queued turn waits its turn, a running one has its worker, an
// interrupted one must not start again, an ended one is over.
func DecideClaim(th *controlv1.ThreadRead, tu *controlv1.Turn, at *controlv1.TurnAttempts, c Claim) ([]*eventsv1.RuntimeEvent, error) {
	scope := Scope{Session: tu.SessionId, Thread: tu.ThreadId, Turn: tu.TurnId}
	started := event(events.TypeTurnStarted, scope)
	started.RunId = c.RunID
	started.Payload = &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: c.WorkerID}}
	notClaimable := func(why string) error {
		return &fault.Error{Kind: fault.KindPrecondition, Reason: ReasonTurnNotClaimable, Subject: "turn/" + tu.TurnId,
			Message:  fmt.Sprintf("turn %s is %s: %s", tu.TurnId, enums.Word(tu.Status), why),
			Metadata: map[string]string{"status": enums.Word(tu.Status)}}
	}
	switch {
	case Terminal(tu.Status):
		return nil, precondition(ReasonTurnEnded, "turn/"+tu.TurnId, "turn %s already ended as %s", tu.TurnId, enums.Word(tu.Status))
	case tu.Status == TurnAccepted:
		if th.ActiveTurnId != tu.TurnId {
			return nil, notClaimable("it is not the thread's active turn")
		}
		return []*eventsv1.RuntimeEvent{started}, nil
	case tu.Status == TurnQueued || tu.Status == TurnSteered:
		return nil, notClaimable("only the thread's active turn runs")
	case tu.Status == TurnInterrupting:
		return nil, notClaimable("an interrupt was requested; it ends, it does not start again")
	}
	last := lastAttempt(at)
	if at.GetResumePending() && last != nil && last.GetStatus() == AttemptParked {
		resumed := event(events.TypeRunStatus, scope)
		resumed.RunId = c.RunID
		resumed.Payload = &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{
			Phase: PhaseResumed, Title: "resumed by worker " + c.WorkerID,
			Detail:      fmt.Sprintf("run %s parked the turn; worker %s continues it from its checkpoint", last.GetRunId(), c.WorkerID),
			Checkpoints: []string{at.GetCheckpointUri()},
			Metadata: map[string]string{"previous_run_id": last.GetRunId(), "worker_id": c.WorkerID,
				"checkpoint_sequence": strconv.FormatUint(at.GetCheckpointSequence(), 10)},
		}}
		return []*eventsv1.RuntimeEvent{started, resumed}, nil
	}
	if at.GetResumePending() || (last != nil && last.GetStatus() == AttemptParked) {
		return nil, notClaimable("it is parked until what it waits for is answered")
	}
	if !at.GetRetryPending() || last == nil || last.GetStatus() != AttemptLost {
		return nil, notClaimable("a worker is running it")
	}
	next := last.GetAttempt() + 1
	retrying := event(events.TypeRunStatus, scope)
	retrying.RunId = c.RunID
	retrying.Payload = &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{
		Phase: PhaseRetrying, Title: fmt.Sprintf("attempt %d of %d", next, at.GetMaxAttempts()),
		Detail: fmt.Sprintf("run %s was lost; worker %s starts the turn again from its input", last.GetRunId(), c.WorkerID),
		Metadata: map[string]string{
			"attempt": strconv.Itoa(int(next)), "max_attempts": strconv.Itoa(int(at.GetMaxAttempts())),
			"previous_run_id": last.GetRunId(), "worker_id": c.WorkerID,
		},
	}}
	if at.GetCheckpointUri() != "" {
		// A run parked the turn earlier: the retry continues from there
		// (answers given since are in the log), not from the input.
		retrying.GetRunStatus().Checkpoints = []string{at.GetCheckpointUri()}
		retrying.GetRunStatus().Metadata["checkpoint_sequence"] = strconv.FormatUint(at.GetCheckpointSequence(), 10)
	}
	return []*eventsv1.RuntimeEvent{started, retrying}, nil
}

// Loss is a run whose lease lapsed.
type Loss struct {
	RunID string
	// MaxAttempts is the turn's budget (MaxAttempts), and Source where it
	// came from.
	MaxAttempts int
	Source      string
}

// DecideLoss records that a claimed run is lost and what follows: another
// attempt while the budget allows, the turn failed "lost" when it is
// spent, or the turn cancelled when an interrupt was already requested
// (nothing runs it any more, which is what the interrupt asked for). The
// run's pending actions are cancelled in every case: the worker that
// waited on them is gone, and a new attempt asks again.
//
// A run that is not the turn's current running attempt (already lost,
// superseded, or the turn ended) is no news: nil, nil. That makes the
// decision safe to take on several replicas at once.
func DecideLoss(th *controlv1.ThreadRead, tu *controlv1.Turn, at *controlv1.TurnAttempts, l Loss) ([]*eventsv1.RuntimeEvent, error) {
	last := lastAttempt(at)
	if Terminal(tu.Status) || last == nil || last.GetRunId() != l.RunID || last.GetStatus() != AttemptRunning {
		return nil, nil
	}
	scope := Scope{Session: tu.SessionId, Thread: tu.ThreadId, Turn: tu.TurnId}
	next := NextRetry
	switch {
	case tu.Status == TurnInterrupting:
		next = NextCancel
	case lostRuns(at)+1 >= l.MaxAttempts:
		// Parked runs handed the turn back; only lost ones spend budget.
		next = NextFail
	}
	lost := event(events.TypeRunStatus, scope)
	lost.RunId = l.RunID
	lost.Payload = &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{
		Phase: PhaseLost, Title: fmt.Sprintf("attempt %d lost", last.GetAttempt()),
		Detail: fmt.Sprintf("the lease of worker %s on turn %s expired: it stopped heartbeating", last.GetWorkerId(), tu.TurnId),
		Metadata: map[string]string{
			"attempt": strconv.Itoa(int(last.GetAttempt())), "max_attempts": strconv.Itoa(l.MaxAttempts),
			"max_attempts_source": l.Source, "worker_id": last.GetWorkerId(), "next": next,
		},
	}}
	out := []*eventsv1.RuntimeEvent{lost}
	for _, a := range th.PendingActions {
		if a.TurnId == tu.TurnId {
			out = append(out, resolveAction(a, eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED, "", "", "runtime"))
		}
	}
	if next == NextRetry {
		return out, nil
	}
	f := event(events.TypeTurnFailed, scope)
	f.RunId = l.RunID
	if next == NextCancel {
		f.Payload = &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: &eventsv1.TurnFailed{
			Outcome: eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED, Category: "interrupted",
			Message: fmt.Sprintf("interrupted; its worker was lost before it stopped (run %s)", l.RunID),
		}}
	} else {
		f.Payload = &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: &eventsv1.TurnFailed{
			Outcome: eventsv1.TurnOutcome_TURN_OUTCOME_FAILED, Category: "lost", Retryable: true,
			Message: fmt.Sprintf("the worker's lease on turn %s (run %s) expired on attempt %d of %d: the worker stopped heartbeating",
				tu.TurnId, l.RunID, last.GetAttempt(), l.MaxAttempts),
		}}
	}
	out = withSubagentEnd(th, append(out, f), f)
	if th.ActiveTurnId == tu.TurnId {
		out = append(out, advanceQueue(th)...)
	}
	return out, nil
}

// ReasonLeaseLost refuses a worker that no longer holds the run it speaks
// for: its lease expired, the run was recorded lost, or another run holds
// the turn now.
const ReasonLeaseLost = "LEASE_LOST"

// LeaseLost is the refusal of run runID on turn tu; current names the
// turn's current run when known.
func LeaseLost(tu *controlv1.Turn, runID, current string) error {
	md := map[string]string{"status": enums.Word(tu.GetStatus()), "run_id": runID}
	msg := fmt.Sprintf("run %s holds no lease on turn %s (expired, lost or never granted); stop working on it", runID, tu.GetTurnId())
	if current != "" && current != runID {
		md["current_run_id"] = current
		msg = fmt.Sprintf("run %s holds no lease on turn %s (run %s does); stop working on it", runID, tu.GetTurnId(), current)
	}
	return fault.Precondition(ReasonLeaseLost, "turn/"+tu.GetTurnId(), msg, md)
}

// CheckReportingRun fences reports for a turn a claim started to the run
// that holds it: the last attempt's run, while it is not lost. Reports of
// a run that was lost, or that name no run or another one, are LEASE_LOST.
// A turn no claim started has no run to fence to.
func CheckReportingRun(tu *controlv1.Turn, at *controlv1.TurnAttempts, runID string) error {
	last := lastAttempt(at)
	if last == nil {
		return nil
	}
	if runID == "" || runID != last.GetRunId() || last.GetStatus() == AttemptLost || last.GetStatus() == AttemptParked {
		return LeaseLost(tu, runID, last.GetRunId())
	}
	return nil
}

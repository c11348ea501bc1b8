// How a task's runs end and what follows: pause and resume, cancel, retry
// with backoff, complete, fail, timeout, loss, archive.

package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

// DecidePause pauses a task; an active run keeps its lease and is told to
// hold in the heartbeat reply.
func DecidePause(t *tasksv1.Task, reason string, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	if err := check(t, CmdPause); err != nil {
		return nil, err
	}
	return []*eventsv1.RuntimeEvent{transition(t, TypeTaskPaused, &eventsv1.TaskTransition{To: Paused, Reason: reason}, now)}, nil
}

// DecideResume returns a paused task where it belongs now: to its run's
// state if a run is active, else queued or blocked by its current edges.
func DecideResume(t *tasksv1.Task, reason string, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	if err := check(t, CmdResume); err != nil {
		return nil, err
	}
	to := t.GetPausedFrom()
	switch {
	case t.GetCurrentRunId() != "":
		if !IsRunState(to) {
			to = Running
		}
	case to == Retrying:
	case len(UnfinishedBlockers(t)) > 0:
		to = Blocked
	default:
		to = Queued
	}
	return []*eventsv1.RuntimeEvent{transition(t, TypeTaskResumed, &eventsv1.TaskTransition{To: to, Reason: reason}, now)}, nil
}

// Cancel is the cancel_task command.
type Cancel struct {
	Reason      string
	RequestedBy string
	Propagate   bool
	Force       bool
	Now         time.Time
}

// DecideCancel records the intent first (task.cancel_requested). With no
// active run the task is cancelled at once; with one it is cancelling
// until the run settles, or until a forced cancel abandons the run.
func DecideCancel(t *tasksv1.Task, c Cancel) ([]*eventsv1.RuntimeEvent, error) {
	if err := check(t, CmdCancel); err != nil {
		return nil, err
	}
	if t.GetStatus() == Cancelling {
		if !c.Force {
			return nil, nil // the intent is already recorded
		}
		return interruptCarried(t, endRun(t, tasksv1.RunStatus_RUN_STATUS_CANCELLED, &tasksv1.TaskError{Category: CategoryCancelled, Message: firstNonEmpty(c.Reason, "cancelled (forced)")}, nil, nil, c.Now,
			transition(t, TypeTaskCancelled, &eventsv1.TaskTransition{To: Cancelled, Reason: firstNonEmpty(c.Reason, "cancelled (forced)")}, c.Now))), nil
	}
	to := Cancelled
	if t.GetCurrentRunId() != "" {
		to = Cancelling
	}
	req := taskEvent(t, TypeTaskCancelRequested, c.Now)
	req.Payload = &eventsv1.RuntimeEvent_TaskCancelRequested{TaskCancelRequested: &eventsv1.TaskCancelRequested{
		From: t.GetStatus(), To: to, Reason: c.Reason, RequestedBy: c.RequestedBy, Propagate: c.Propagate,
		CarriedBy: CarriedBy(t),
	}}
	evs := []*eventsv1.RuntimeEvent{req}
	if to == Cancelled {
		evs = append(evs, transition(t, TypeTaskCancelled, &eventsv1.TaskTransition{From: to, To: Cancelled, Reason: c.Reason}, c.Now))
	} else if c.Force {
		evs = append(evs, interruptCarried(t, endRun(t, tasksv1.RunStatus_RUN_STATUS_CANCELLED, &tasksv1.TaskError{Category: CategoryCancelled, Message: firstNonEmpty(c.Reason, "cancelled (forced)")}, nil, nil, c.Now,
			transition(t, TypeTaskCancelled, &eventsv1.TaskTransition{From: Cancelling, To: Cancelled, Reason: c.Reason}, c.Now)))...)
	}
	return evs, nil
}

// Retry is the retry_task command.
type Retry struct {
	Reason string
	// Start binds the new attempt now; nil leaves the task retrying for a
	// worker's poll.
	Start *Start
	Now   time.Time
}

// DecideRetry opens a new attempt after a terminal failure; every prior
// attempt stays in the record. Constraints are inherited: the spec is the
// task's, unchanged.
func DecideRetry(t *tasksv1.Task, r Retry) ([]*eventsv1.RuntimeEvent, error) {
	if err := check(t, CmdRetry); err != nil {
		return nil, err
	}
	if strings.TrimSpace(r.Reason) == "" {
		return nil, fault.Invalid("reason", "%s", "a retry needs an explicit reason")
	}
	evs := []*eventsv1.RuntimeEvent{transition(t, TypeTaskRetrying, &eventsv1.TaskTransition{To: Retrying, Reason: r.Reason}, r.Now)}
	if r.Start != nil {
		next := proto.Clone(t).(*tasksv1.Task)
		next.Status = Retrying
		s := *r.Start
		s.Reason = r.Reason
		evs = append(evs, startAttempt(next, s)...)
	}
	return evs, nil
}

// Complete is the complete_task command.
type Complete struct {
	RunID          string
	Summary        string
	Artifacts      []string
	EvidenceRefs   []string
	OutputRefs     []*commonv1.OutputRef
	CheckpointRefs []string
	NativeStatus   string
	Now            time.Time
}

// DecideComplete reconciles completion: refused while the acceptance
// criteria name an artifact or evidence ref that is not recorded on the
// task (or in this command). A provider's success alone is not enough.
func DecideComplete(t *tasksv1.Task, c Complete) ([]*eventsv1.RuntimeEvent, error) {
	a, err := checkRun(t, CmdComplete, c.RunID)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, want := range t.GetSpec().GetAcceptance().GetRequiredArtifacts() {
		if !slices.Contains(t.GetArtifacts(), want) && !slices.Contains(c.Artifacts, want) && !hasEdge(t, tasksv1.EdgeRelation_EDGE_RELATION_PRODUCED_ARTIFACT, want) {
			missing = append(missing, "artifact:"+want)
		}
	}
	for _, want := range t.GetSpec().GetAcceptance().GetRequiredEvidence() {
		if !slices.Contains(t.GetEvidenceRefs(), want) && !slices.Contains(c.EvidenceRefs, want) && !hasEdge(t, tasksv1.EdgeRelation_EDGE_RELATION_EVIDENCE, want) {
			missing = append(missing, "evidence:"+want)
		}
	}
	if len(missing) > 0 {
		return nil, &fault.Error{Kind: fault.KindPrecondition,
			Reason:   ReasonAcceptanceNotMet,
			Subject:  "task/" + t.GetTaskId(),
			Message:  "acceptance criteria not met; not recorded: " + strings.Join(missing, ", "),
			Metadata: map[string]string{"missing": strings.Join(missing, ",")},
		}
	}
	done := attemptEvent(t, TypeAttemptCompleted, a.GetRunId(), a.GetAttemptId(), c.Now)
	done.Payload = &eventsv1.RuntimeEvent_TaskAttemptCompleted{TaskAttemptCompleted: &eventsv1.TaskAttemptCompleted{
		Summary: c.Summary, OutputRefs: c.OutputRefs, CheckpointRefs: c.CheckpointRefs,
	}}
	completed := taskEvent(t, TypeTaskCompleted, c.Now)
	completed.RunId, completed.AttemptId = a.GetRunId(), a.GetAttemptId()
	completed.Payload = &eventsv1.RuntimeEvent_TaskCompleted{TaskCompleted: &eventsv1.TaskCompleted{
		From: t.GetStatus(), Summary: c.Summary, Artifacts: c.Artifacts, EvidenceRefs: c.EvidenceRefs, NativeStatus: c.NativeStatus,
	}}
	return []*eventsv1.RuntimeEvent{done, completed}, nil
}

func hasEdge(t *tasksv1.Task, rel tasksv1.EdgeRelation, target string) bool {
	for _, e := range t.GetEdges() {
		if e.GetRelation() == rel && e.GetTargetId() == target && e.GetStatus() != tasksv1.EdgeStatus_EDGE_STATUS_REMOVED {
			return true
		}
	}
	return false
}

// Fail is the fail_task command.
type Fail struct {
	RunID          string
	Error          *tasksv1.TaskError
	OutputRefs     []*commonv1.OutputRef
	CheckpointRefs []string
	NoRetry        bool
	Now            time.Time
}

// DecideFail ends the active run as failed. A cancelling task becomes
// cancelled; otherwise the retry policy decides between retrying (with
// backoff) and failed.
func DecideFail(t *tasksv1.Task, f Fail) ([]*eventsv1.RuntimeEvent, error) {
	if _, err := checkRun(t, CmdFail, f.RunID); err != nil {
		return nil, err
	}
	var after []*eventsv1.RuntimeEvent
	switch {
	case t.GetStatus() == Cancelling:
		after = append(after, transition(t, TypeTaskCancelled, &eventsv1.TaskTransition{To: Cancelled, Reason: "run ended after cancellation was requested", Error: f.Error}, f.Now))
	case !f.NoRetry && f.Error.GetRetryable():
		if notBefore, ok := NextAttempt(t, f.Error.GetCategory(), f.Now); ok {
			after = append(after, retryingAfter(t, Failed, f.Error, notBefore, f.Now))
			break
		}
		after = append(after, transition(t, TypeTaskFailed, &eventsv1.TaskTransition{To: Failed, Reason: f.Error.GetMessage(), Error: f.Error}, f.Now))
	default:
		after = append(after, transition(t, TypeTaskFailed, &eventsv1.TaskTransition{To: Failed, Reason: f.Error.GetMessage(), Error: f.Error}, f.Now))
	}
	return endRun(t, tasksv1.RunStatus_RUN_STATUS_FAILED, f.Error, f.OutputRefs, f.CheckpointRefs, f.Now, after...), nil
}

func retryingAfter(t *tasksv1.Task, from S, err *tasksv1.TaskError, notBefore time.Time, now time.Time) *eventsv1.RuntimeEvent {
	return transition(t, TypeTaskRetrying, &eventsv1.TaskTransition{
		From: from, To: Retrying, Reason: fmt.Sprintf("retry policy: attempt %d of %d after %s", len(t.GetAttempts())+1, t.GetSpec().GetRetryPolicy().GetMaxAttempts(), err.GetCategory()),
		Error: err, NotBefore: timestamppb.New(notBefore),
	}, now)
}

// endRun is task.attempt.failed for the active run followed by the task's
// own events.
func endRun(t *tasksv1.Task, status tasksv1.RunStatus, e *tasksv1.TaskError, outs []*commonv1.OutputRef, checkpoints []string, now time.Time, after ...*eventsv1.RuntimeEvent) []*eventsv1.RuntimeEvent {
	a := CurrentAttempt(t)
	failed := attemptEvent(t, TypeAttemptFailed, a.GetRunId(), a.GetAttemptId(), now)
	failed.Payload = &eventsv1.RuntimeEvent_TaskAttemptFailed{TaskAttemptFailed: &eventsv1.TaskAttemptFailed{
		Status: status, Error: e, OutputRefs: outs, CheckpointRefs: checkpoints,
	}}
	for _, ev := range after {
		ev.RunId, ev.AttemptId = a.GetRunId(), a.GetAttemptId()
	}
	return append([]*eventsv1.RuntimeEvent{failed}, after...)
}

// DecideTimeout ends the active run when a time or inactivity limit fired:
// the task is timed_out (cancelled if cancellation was pending), then the
// retry policy may schedule another attempt.
func DecideTimeout(t *tasksv1.Task, runID, why string, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	if _, err := checkRun(t, CmdTimeout, runID); err != nil {
		return nil, err
	}
	e := &tasksv1.TaskError{Category: CategoryTimeout, Message: why, Retryable: true}
	return interruptCarried(t, endBySupervisor(t, tasksv1.RunStatus_RUN_STATUS_TIMED_OUT, TypeTaskTimedOut, TimedOut, e, now)), nil
}

// interruptCarried names, on the attempt's end, the turn that carries the
// run (DelegateTaskRun) when the run ends without that turn (a timeout, a
// forced cancel): the control service interrupts the turn.
func interruptCarried(t *tasksv1.Task, evs []*eventsv1.RuntimeEvent) []*eventsv1.RuntimeEvent {
	turn := CarriedBy(t)
	if turn == nil {
		return evs
	}
	for _, ev := range evs {
		if f := ev.GetTaskAttemptFailed(); f != nil {
			f.CarriedBy = turn
		}
	}
	return evs
}

// DecideLose marks the active run lost: its lease expired, so nobody can
// prove it is alive. It is never completed and never silently retried:
// task.attempt.failed (lost) and task.lost are written first, and only
// then may the retry policy schedule a new attempt.
func DecideLose(t *tasksv1.Task, runID string, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	a, err := checkRun(t, CmdLose, runID)
	if err != nil {
		return nil, err
	}
	if a.GetCarriedBy() != nil {
		// Its lease was released when a turn took it over: only the
		// turn's end settles it.
		return nil, RunDelegated(t, a)
	}
	e := &tasksv1.TaskError{Category: CategoryLost, Message: "worker lease expired without a heartbeat", Retryable: true}
	return endBySupervisor(t, tasksv1.RunStatus_RUN_STATUS_LOST, TypeTaskLost, Lost, e, now), nil
}

func endBySupervisor(t *tasksv1.Task, run tasksv1.RunStatus, typ string, to S, e *tasksv1.TaskError, now time.Time) []*eventsv1.RuntimeEvent {
	if t.GetStatus() == Cancelling {
		return endRun(t, run, e, nil, nil, now, transition(t, TypeTaskCancelled, &eventsv1.TaskTransition{To: Cancelled, Reason: e.GetMessage(), Error: e}, now))
	}
	after := []*eventsv1.RuntimeEvent{transition(t, typ, &eventsv1.TaskTransition{To: to, Reason: e.GetMessage(), Error: e}, now)}
	if notBefore, ok := NextAttempt(t, e.GetCategory(), now); ok {
		after = append(after, retryingAfter(t, to, e, notBefore, now))
	}
	return endRun(t, run, e, nil, nil, now, after...)
}

// DecideArchive removes a terminal task from active scheduling.
func DecideArchive(t *tasksv1.Task, reason string, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	if err := check(t, CmdArchive); err != nil {
		return nil, err
	}
	return []*eventsv1.RuntimeEvent{transition(t, TypeTaskArchived, &eventsv1.TaskTransition{To: Archived, Reason: reason}, now)}, nil
}

// NextAttempt applies the task's retry policy to an attempt that ended
// with category: whether another attempt may start, and not before when.
func NextAttempt(t *tasksv1.Task, category string, now time.Time) (time.Time, bool) {
	p := t.GetSpec().GetRetryPolicy()
	done := uint32(len(t.GetAttempts()))
	if p.GetMaxAttempts() <= done || slices.Contains(p.GetNonRetryableCategories(), category) || t.GetCancelRequested() {
		return time.Time{}, false
	}
	return now.Add(Backoff(p, done)), true
}

// Backoff is the wait before attempt n+1 after n attempts:
// initial * multiplier^(n-1), capped at max_backoff.
func Backoff(p *tasksv1.RetryPolicy, n uint32) time.Duration {
	d := p.GetInitialBackoff().AsDuration()
	if d <= 0 || n == 0 {
		return max(d, 0)
	}
	mult := p.GetBackoffMultiplier()
	if mult == 0 {
		mult = 2
	}
	limit := p.GetMaxBackoff().AsDuration()
	f := float64(d)
	for i := uint32(1); i < n; i++ {
		f *= mult
		if limit > 0 && f >= float64(limit) {
			return limit
		}
	}
	if limit > 0 && time.Duration(f) > limit {
		return limit
	}
	return time.Duration(f)
}

// A task's runs: starting an attempt, its progress, the run a report is about.

package domain

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

// Start is the start_task command (also what a worker's poll runs).
type Start struct {
	RunID, AttemptID string
	Worker           *tasksv1.WorkerRef
	InputRefs        []string
	Leased           bool
	Reason           string
	Now              time.Time
}

// DecideStart begins a new attempt: task.attempt.started, task.started.
// A task with an unfinished blocker cannot start.
func DecideStart(t *tasksv1.Task, s Start) ([]*eventsv1.RuntimeEvent, error) {
	if t.GetStatus() == Blocked || (in(t.GetStatus(), allowed[CmdStart]) && len(UnfinishedBlockers(t)) > 0) {
		return nil, blockedError(t)
	}
	if err := check(t, CmdStart); err != nil {
		return nil, err
	}
	if t.GetCancelRequested() {
		return nil, illegal(t, CmdStart)
	}
	return startAttempt(t, s), nil
}

func blockedError(t *tasksv1.Task) error {
	var ids []string
	for _, e := range UnfinishedBlockers(t) {
		ids = append(ids, e.GetTargetId())
	}
	return &fault.Error{Kind: fault.KindPrecondition,
		Reason:   ReasonTaskBlocked,
		Subject:  "task/" + t.GetTaskId(),
		Message:  fmt.Sprintf("task is blocked (%s); start needs every blocked_by task completed", blockReason(t)),
		Metadata: map[string]string{"blocked_by": strings.Join(ids, ","), "status": StatusName(t.GetStatus())},
	}
}

func startAttempt(t *tasksv1.Task, s Start) []*eventsv1.RuntimeEvent {
	reason := s.Reason
	if reason == "" {
		reason = "first"
		if len(t.GetAttempts()) > 0 {
			reason = "retry"
		}
	}
	a := &tasksv1.Attempt{
		RunId:          s.RunID,
		AttemptId:      s.AttemptID,
		Ordinal:        uint32(len(t.GetAttempts()) + 1),
		Status:         tasksv1.RunStatus_RUN_STATUS_RUNNING,
		Worker:         s.Worker,
		InputRefs:      s.InputRefs,
		StartedAt:      timestamppb.New(s.Now),
		Reason:         reason,
		Leased:         s.Leased,
		LastActivityAt: timestamppb.New(s.Now),
	}
	started := attemptEvent(t, TypeAttemptStarted, s.RunID, s.AttemptID, s.Now)
	started.ThreadId = firstNonEmpty(s.Worker.GetThreadId(), t.GetThreadId())
	started.JobId, started.JobItemId = s.Worker.GetJobId(), s.Worker.GetJobItemId()
	started.Payload = &eventsv1.RuntimeEvent_TaskAttemptStarted{TaskAttemptStarted: &eventsv1.TaskAttemptStarted{Attempt: a, From: t.GetStatus()}}
	run := transition(t, TypeTaskStarted, &eventsv1.TaskTransition{To: Running, Reason: reason}, s.Now)
	run.RunId, run.AttemptId = s.RunID, s.AttemptID
	return []*eventsv1.RuntimeEvent{started, run}
}

// CurrentAttempt is the attempt of the active run, nil when none.
// StartInFlight is the attempt of a start whose task.attempt.started is
// folded but whose task.started is not: a start is appended as two chained
// events, and another writer may append between them (its own start, a
// report on the new run) once it has read the first. The task is then
// still queued (or accepted, retrying) with a running attempt.
func StartInFlight(t *tasksv1.Task) (*tasksv1.Attempt, bool) {
	a := CurrentAttempt(t)
	if a == nil || a.GetStatus() != tasksv1.RunStatus_RUN_STATUS_RUNNING || !in(t.GetStatus(), allowed[CmdStart]) {
		return nil, false
	}
	return a, true
}

// FinishStart is the rest of a start cut after its attempt (StartInFlight):
// the task.started of that attempt.
func FinishStart(t *tasksv1.Task, a *tasksv1.Attempt, now time.Time) []*eventsv1.RuntimeEvent {
	run := transition(t, TypeTaskStarted, &eventsv1.TaskTransition{To: Running, Reason: a.GetReason()}, now)
	run.RunId, run.AttemptId = a.GetRunId(), a.GetAttemptId()
	return []*eventsv1.RuntimeEvent{run}
}

// StartInProgress refuses a start while another run's start is in flight:
// the task is as good as running (the refusal a start gets once that
// start's task.started lands).
func StartInProgress(t *tasksv1.Task) error {
	running := proto.Clone(t).(*tasksv1.Task)
	running.Status = Running
	return illegal(running, CmdStart)
}

func CurrentAttempt(t *tasksv1.Task) *tasksv1.Attempt {
	if t.GetCurrentRunId() == "" {
		return nil
	}
	for i := len(t.GetAttempts()) - 1; i >= 0; i-- {
		if a := t.GetAttempts()[i]; a.GetRunId() == t.GetCurrentRunId() {
			return a
		}
	}
	return nil
}

// checkRun: the command names the active run.
func checkRun(t *tasksv1.Task, cmd Command, runID string) (*tasksv1.Attempt, error) {
	if err := check(t, cmd); err != nil {
		return nil, err
	}
	a := CurrentAttempt(t)
	if a == nil || a.GetRunId() != runID {
		current := t.GetCurrentRunId()
		desc := fmt.Sprintf("run %s is not the task's active run", runID)
		if current == "" {
			desc += " (the task has no active run)"
		} else {
			desc += " (active: " + current + ")"
		}
		return nil, &fault.Error{Kind: fault.KindPrecondition,
			Reason: ReasonRunMismatch, Subject: "task/" + t.GetTaskId(), Message: desc,
			Metadata: map[string]string{"run_id": runID, "current_run_id": current, "command": string(cmd)},
		}
	}
	return a, nil
}

// Progress is the append_task_progress command.
type Progress struct {
	RunID          string
	Progress       *tasksv1.Progress
	Artifacts      []string
	EvidenceRefs   []string
	CheckpointRefs []string
	// RunState moves a running task between preparing, running and the
	// waiting statuses; UNSPECIFIED leaves it.
	RunState S
	Reason   string
	Now      time.Time
}

// DecideProgress records progress facts and run state changes.
func DecideProgress(t *tasksv1.Task, p Progress) ([]*eventsv1.RuntimeEvent, error) {
	a, err := checkRun(t, CmdProgress, p.RunID)
	if err != nil {
		return nil, err
	}
	var evs []*eventsv1.RuntimeEvent
	to := tasksv1.TaskStatus_TASK_STATUS_UNSPECIFIED
	// A paused or cancelling task keeps its status: the run reports what it
	// does, the task's intent stays.
	if p.RunState != to && p.RunState != t.GetStatus() && IsRunState(t.GetStatus()) {
		if IsWaiting(p.RunState) {
			w := transition(t, TypeTaskWaiting, &eventsv1.TaskTransition{To: p.RunState, Reason: p.Reason}, p.Now)
			w.RunId, w.AttemptId = a.GetRunId(), a.GetAttemptId()
			evs = append(evs, w)
		} else {
			to = p.RunState
		}
	}
	if p.Progress != nil || len(p.Artifacts) > 0 || len(p.EvidenceRefs) > 0 || len(p.CheckpointRefs) > 0 || to != tasksv1.TaskStatus_TASK_STATUS_UNSPECIFIED || len(evs) == 0 {
		ev := taskEvent(t, TypeTaskProgress, p.Now)
		ev.RunId, ev.AttemptId = a.GetRunId(), a.GetAttemptId()
		ev.Payload = &eventsv1.RuntimeEvent_TaskProgress{TaskProgress: &eventsv1.TaskProgressed{
			Progress: p.Progress, Artifacts: p.Artifacts, EvidenceRefs: p.EvidenceRefs, CheckpointRefs: p.CheckpointRefs, To: to,
		}}
		evs = append(evs, ev)
	}
	return evs, nil
}

package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

// Error categories the runtime itself assigns.
const (
	CategoryLost      = "lost"
	CategoryTimeout   = "timeout"
	CategoryCancelled = "cancelled"
)

// Create is the create_task command. Blockers carries the current status
// of every task named in BlockedBy (the app reads them); Parent the parent
// task when ParentTaskID is set.
type Create struct {
	TaskID, SessionID, ThreadID, TurnID string
	IdempotencyKey                      string
	Spec                                *tasksv1.TaskSpec
	Parent                              *tasksv1.Task
	BlockedBy                           []string
	Blockers                            map[string]S
	Draft                               bool
	Now                                 time.Time
}

// DecideCreate returns task.created and the task's first placement
// (task.queued, or task.blocked while a blocker is unfinished). existing is
// the record already at the task id, nil if none: the same idempotency key
// answers with no events (the first create stands); anything else is a
// conflict.
func DecideCreate(existing *tasksv1.Task, c Create) ([]*eventsv1.RuntimeEvent, error) {
	if existing != nil {
		if c.IdempotencyKey != "" && existing.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_UNSPECIFIED {
			return nil, nil
		}
		return nil, fault.AlreadyExists("task", c.TaskID, "a task with this id exists")
	}
	t := &tasksv1.Task{
		TaskId:       c.TaskID,
		RootTaskId:   c.TaskID,
		SessionId:    c.SessionID,
		ThreadId:     c.ThreadID,
		TurnId:       c.TurnID,
		Spec:         proto.Clone(c.Spec).(*tasksv1.TaskSpec),
		Status:       Accepted,
		NativeStatus: c.Spec.GetNativeStatus(),
		CreatedAt:    timestamppb.New(c.Now),
		UpdatedAt:    timestamppb.New(c.Now),
	}
	if c.Draft {
		t.Status = Draft
	}
	ts := timestamppb.New(c.Now)
	if c.Parent != nil {
		if err := check(c.Parent, CmdSpawnChild); err != nil {
			return nil, err
		}
		if c.Parent.GetCancelRequested() {
			return nil, parentCancelled(c.Parent)
		}
		t.ParentTaskId = c.Parent.GetTaskId()
		t.RootTaskId = c.Parent.GetRootTaskId()
		if t.SessionId == "" {
			// A child lives in its parent's session unless told otherwise.
			t.SessionId, t.ThreadId = c.Parent.GetSessionId(), firstNonEmpty(t.ThreadId, c.Parent.GetThreadId())
		}
		t.Edges = append(t.Edges, &tasksv1.Edge{Relation: tasksv1.EdgeRelation_EDGE_RELATION_PARENT, TargetId: t.ParentTaskId, Status: tasksv1.EdgeStatus_EDGE_STATUS_ACTIVE, CreatedAt: ts, UpdatedAt: ts})
	}
	for _, b := range c.BlockedBy {
		if b == c.TaskID {
			return nil, fault.Invalid("blocked_by", "%s", "a task cannot block itself")
		}
		t.Edges = append(t.Edges, &tasksv1.Edge{Relation: blockedBy, TargetId: b, Status: edgeStatusFor(c.Blockers[b]), CreatedAt: ts, UpdatedAt: ts})
	}
	created := taskEvent(t, TypeTaskCreated, c.Now)
	created.RequestId = c.IdempotencyKey
	created.Payload = &eventsv1.RuntimeEvent_TaskCreated{TaskCreated: &eventsv1.TaskCreated{Task: t, IdempotencyKey: c.IdempotencyKey}}
	evs := []*eventsv1.RuntimeEvent{created}
	if !c.Draft {
		evs = append(evs, place(t, Accepted, "", c.Now))
	}
	return evs, nil
}

func parentCancelled(parent *tasksv1.Task) error {
	return &fault.Error{Kind: fault.KindPrecondition,
		Reason:   ReasonParentCancelled,
		Subject:  "task/" + parent.GetTaskId(),
		Message:  fmt.Sprintf("parent task %s has cancellation requested; no new child work is added", parent.GetTaskId()),
		Metadata: map[string]string{"parent_task_id": parent.GetTaskId(), "status": StatusName(parent.GetStatus())},
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

const blockedBy = tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY

// BlockerStatus is the status a task shows the tasks it blocks: its own,
// except that an archived task shows how it ended (completed when its last
// attempt completed, failed otherwise): archiving a finished blocker does
// not block its dependents again. A reaction may read the blocker after
// it was archived (the read model is at or past the event reacted to).
func BlockerStatus(t *tasksv1.Task) S {
	if t.GetStatus() != Archived {
		return t.GetStatus()
	}
	if n := len(t.GetAttempts()); n > 0 && t.GetAttempts()[n-1].GetStatus() == tasksv1.RunStatus_RUN_STATUS_COMPLETED {
		return Completed
	}
	return Failed
}

// edgeStatusFor maps a blocker's status onto its BLOCKED_BY edge: only a
// completed blocker satisfies it; an ended-without-success one fails it
// (surfaced on the dependent); anything else keeps it active.
func edgeStatusFor(s S) tasksv1.EdgeStatus {
	switch s {
	case Completed:
		return tasksv1.EdgeStatus_EDGE_STATUS_SATISFIED
	case Failed, Cancelled, TimedOut, Lost:
		return tasksv1.EdgeStatus_EDGE_STATUS_FAILED
	}
	return tasksv1.EdgeStatus_EDGE_STATUS_ACTIVE
}

// UnfinishedBlockers are the BLOCKED_BY edges not yet satisfied (active or
// failed).
func UnfinishedBlockers(t *tasksv1.Task) []*tasksv1.Edge {
	var out []*tasksv1.Edge
	for _, e := range t.GetEdges() {
		if e.GetRelation() == blockedBy && (e.GetStatus() == tasksv1.EdgeStatus_EDGE_STATUS_ACTIVE || e.GetStatus() == tasksv1.EdgeStatus_EDGE_STATUS_FAILED) {
			out = append(out, e)
		}
	}
	return out
}

// blockReason explains a blocked task, failed dependencies first.
func blockReason(t *tasksv1.Task) string {
	var failed, waiting []string
	for _, e := range UnfinishedBlockers(t) {
		if e.GetStatus() == tasksv1.EdgeStatus_EDGE_STATUS_FAILED {
			failed = append(failed, e.GetTargetId())
		} else {
			waiting = append(waiting, e.GetTargetId())
		}
	}
	var parts []string
	if len(failed) > 0 {
		parts = append(parts, "dependency failed: "+strings.Join(failed, ", "))
	}
	if len(waiting) > 0 {
		parts = append(parts, "waiting for: "+strings.Join(waiting, ", "))
	}
	return strings.Join(parts, "; ")
}

// place puts a task that is not running where it belongs: blocked while a
// blocker is unfinished, queued otherwise.
func place(t *tasksv1.Task, from S, reason string, now time.Time) *eventsv1.RuntimeEvent {
	if len(UnfinishedBlockers(t)) > 0 {
		return transition(t, TypeTaskBlocked, &eventsv1.TaskTransition{From: from, To: Blocked, Reason: blockReason(t)}, now)
	}
	return transition(t, TypeTaskQueued, &eventsv1.TaskTransition{From: from, To: Queued, Reason: reason}, now)
}

// DecideSubmit accepts a draft.
func DecideSubmit(t *tasksv1.Task, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	if err := check(t, CmdSubmit); err != nil {
		return nil, err
	}
	return []*eventsv1.RuntimeEvent{
		transition(t, TypeTaskAccepted, &eventsv1.TaskTransition{To: Accepted}, now),
		place(t, Accepted, "", now),
	}, nil
}

// DecideUpdate replaces the named spec fields. An update that changes
// nothing appends nothing.
func DecideUpdate(t *tasksv1.Task, spec *tasksv1.TaskSpec, fields []string, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	if err := check(t, CmdUpdate); err != nil {
		return nil, err
	}
	next := proto.Clone(t.GetSpec()).(*tasksv1.TaskSpec)
	if next == nil {
		next = &tasksv1.TaskSpec{}
	}
	src := spec.ProtoReflect()
	dst := next.ProtoReflect()
	var changed []string
	for _, name := range fields {
		fd := src.Descriptor().Fields().ByName(protoName(name))
		if fd == nil {
			return nil, fault.Invalid("update_fields", "%s", fmt.Sprintf("%q is not a task spec field", name))
		}
		before := proto.Clone(next)
		if src.Has(fd) {
			dst.Set(fd, src.Get(fd))
		} else {
			dst.Clear(fd)
		}
		if !proto.Equal(before, next) {
			changed = append(changed, name)
		}
	}
	if len(changed) == 0 {
		return nil, nil
	}
	ev := taskEvent(t, TypeTaskUpdated, now)
	ev.Payload = &eventsv1.RuntimeEvent_TaskUpdated{TaskUpdated: &eventsv1.TaskUpdated{Spec: next, ChangedFields: changed}}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

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
		return endRun(t, tasksv1.RunStatus_RUN_STATUS_CANCELLED, &tasksv1.TaskError{Category: CategoryCancelled, Message: firstNonEmpty(c.Reason, "cancelled (forced)")}, nil, nil, c.Now,
			transition(t, TypeTaskCancelled, &eventsv1.TaskTransition{To: Cancelled, Reason: firstNonEmpty(c.Reason, "cancelled (forced)")}, c.Now)), nil
	}
	to := Cancelled
	if t.GetCurrentRunId() != "" {
		to = Cancelling
	}
	req := taskEvent(t, TypeTaskCancelRequested, c.Now)
	req.Payload = &eventsv1.RuntimeEvent_TaskCancelRequested{TaskCancelRequested: &eventsv1.TaskCancelRequested{
		From: t.GetStatus(), To: to, Reason: c.Reason, RequestedBy: c.RequestedBy, Propagate: c.Propagate,
	}}
	evs := []*eventsv1.RuntimeEvent{req}
	if to == Cancelled {
		evs = append(evs, transition(t, TypeTaskCancelled, &eventsv1.TaskTransition{From: to, To: Cancelled, Reason: c.Reason}, c.Now))
	} else if c.Force {
		evs = append(evs, endRun(t, tasksv1.RunStatus_RUN_STATUS_CANCELLED, &tasksv1.TaskError{Category: CategoryCancelled, Message: firstNonEmpty(c.Reason, "cancelled (forced)")}, nil, nil, c.Now,
			transition(t, TypeTaskCancelled, &eventsv1.TaskTransition{From: Cancelling, To: Cancelled, Reason: c.Reason}, c.Now))...)
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
	return endBySupervisor(t, tasksv1.RunStatus_RUN_STATUS_TIMED_OUT, TypeTaskTimedOut, TimedOut, e, now), nil
}

// DecideLose marks the active run lost: its lease expired, so nobody can
// prove it is alive. It is never completed and never silently retried:
// task.attempt.failed (lost) and task.lost are written first, and only
// then may the retry policy schedule a new attempt.
func DecideLose(t *tasksv1.Task, runID string, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	if _, err := checkRun(t, CmdLose, runID); err != nil {
		return nil, err
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

// Link is link_tasks or unlink_tasks, normalized onto the task that stores
// the edge (see EdgeRelation). TargetStatus is the target task's status
// for BLOCKED_BY edges.
type Link struct {
	Relation     tasksv1.EdgeRelation
	TargetID     string
	Reason       string
	Remove       bool
	TargetStatus S
	Now          time.Time
}

// Normalize turns (a, CHILD, b) into (b, PARENT, a) and (a, BLOCKS, b)
// into (b, BLOCKED_BY, a): each edge lives on the task it constrains.
func Normalize(taskID string, rel tasksv1.EdgeRelation, target string) (string, tasksv1.EdgeRelation, string) {
	switch rel {
	case tasksv1.EdgeRelation_EDGE_RELATION_CHILD:
		return target, tasksv1.EdgeRelation_EDGE_RELATION_PARENT, taskID
	case tasksv1.EdgeRelation_EDGE_RELATION_BLOCKS:
		return target, blockedBy, taskID
	}
	return taskID, rel, target
}

// IsTaskRelation: the edge's target is a task (the app checks it exists).
func IsTaskRelation(rel tasksv1.EdgeRelation) bool {
	switch rel {
	case tasksv1.EdgeRelation_EDGE_RELATION_PARENT, tasksv1.EdgeRelation_EDGE_RELATION_CHILD,
		tasksv1.EdgeRelation_EDGE_RELATION_BLOCKS, blockedBy, tasksv1.EdgeRelation_EDGE_RELATION_SOURCE_TASK:
		return true
	}
	return false
}

// DecideLink adds or removes an edge stored on t. Adding a BLOCKED_BY edge
// to a queued task blocks it; removing the last unfinished one queues it.
// Cycle detection needs the graph and is the app's (see PathExists).
func DecideLink(t *tasksv1.Task, l Link) ([]*eventsv1.RuntimeEvent, error) {
	cmd := CmdLink
	if l.Relation == blockedBy && !l.Remove {
		cmd = CmdBlock
	}
	if err := check(t, cmd); err != nil {
		return nil, err
	}
	if l.Relation == tasksv1.EdgeRelation_EDGE_RELATION_PARENT && !l.Remove && t.GetParentTaskId() != "" && t.GetParentTaskId() != l.TargetID {
		return nil, fault.Invalid("relation", "%s", fmt.Sprintf("task %s already has parent %s", t.GetTaskId(), t.GetParentTaskId()))
	}
	if IsTaskRelation(l.Relation) && l.TargetID == t.GetTaskId() {
		return nil, fault.Invalid("target_id", "%s", "a task cannot be linked to itself")
	}
	existing := findEdge(t, l.Relation, l.TargetID)
	ts := timestamppb.New(l.Now)
	var edge *tasksv1.Edge
	switch {
	case l.Remove && (existing == nil || existing.GetStatus() == tasksv1.EdgeStatus_EDGE_STATUS_REMOVED):
		return nil, &fault.Error{Kind: fault.KindPrecondition,
			Reason: ReasonEdgeNotFound, Subject: "task/" + t.GetTaskId(),
			Message:  fmt.Sprintf("task %s has no %s edge to %s", t.GetTaskId(), relationName(l.Relation), l.TargetID),
			Metadata: map[string]string{"relation": relationName(l.Relation), "target_id": l.TargetID},
		}
	case l.Remove:
		edge = proto.Clone(existing).(*tasksv1.Edge)
		edge.Status, edge.Reason, edge.UpdatedAt = tasksv1.EdgeStatus_EDGE_STATUS_REMOVED, l.Reason, ts
	case existing != nil && existing.GetStatus() != tasksv1.EdgeStatus_EDGE_STATUS_REMOVED:
		return nil, nil // linking twice is a no-op
	default:
		status := tasksv1.EdgeStatus_EDGE_STATUS_ACTIVE
		if l.Relation == blockedBy {
			status = edgeStatusFor(l.TargetStatus)
		}
		edge = &tasksv1.Edge{Relation: l.Relation, TargetId: l.TargetID, Status: status, Reason: l.Reason, CreatedAt: ts, UpdatedAt: ts}
		if existing != nil {
			edge.CreatedAt = existing.GetCreatedAt()
		}
	}
	return []*eventsv1.RuntimeEvent{dependencyUpdated(t, edge, l.Now)}, nil
}

func relationName(r tasksv1.EdgeRelation) string {
	return enums.Word(r)
}

func findEdge(t *tasksv1.Task, rel tasksv1.EdgeRelation, target string) *tasksv1.Edge {
	for _, e := range t.GetEdges() {
		if e.GetRelation() == rel && e.GetTargetId() == target {
			return e
		}
	}
	return nil
}

// dependencyUpdated builds task.dependency.updated for an edge change, and
// moves the task between queued/accepted and blocked when its blockers
// say so.
func dependencyUpdated(t *tasksv1.Task, edge *tasksv1.Edge, now time.Time) *eventsv1.RuntimeEvent {
	next := proto.Clone(t).(*tasksv1.Task)
	upsertEdge(next, edge)
	p := &eventsv1.TaskDependencyUpdated{Edge: edge}
	unfinished := len(UnfinishedBlockers(next)) > 0
	switch {
	case unfinished && (t.GetStatus() == Queued || t.GetStatus() == Accepted):
		p.To, p.StatusReason = Blocked, blockReason(next)
	case unfinished && t.GetStatus() == Blocked:
		p.StatusReason = blockReason(next) // still blocked; the reason may have changed (a failed dependency)
	case !unfinished && t.GetStatus() == Blocked:
		p.To, p.StatusReason = Queued, "dependencies completed"
	}
	ev := taskEvent(t, TypeTaskDependencyUpdated, now)
	ev.Payload = &eventsv1.RuntimeEvent_TaskDependencyUpdated{TaskDependencyUpdated: p}
	return ev
}

// DecideDependency updates t's BLOCKED_BY edge to blocker after the
// blocker's status changed (the dependency reactor). Nothing changes when
// the edge already says so, so replays and concurrent replicas append
// nothing twice.
func DecideDependency(t *tasksv1.Task, blocker string, blockerStatus S, now time.Time) []*eventsv1.RuntimeEvent {
	e := findEdge(t, blockedBy, blocker)
	if e == nil || e.GetStatus() == tasksv1.EdgeStatus_EDGE_STATUS_REMOVED || t.GetStatus() == Archived {
		return nil
	}
	status := edgeStatusFor(blockerStatus)
	if status == e.GetStatus() {
		return nil
	}
	edge := proto.Clone(e).(*tasksv1.Edge)
	edge.Status, edge.UpdatedAt = status, timestamppb.New(now)
	edge.Reason = "blocker is " + StatusName(blockerStatus)
	return []*eventsv1.RuntimeEvent{dependencyUpdated(t, edge, now)}
}

// Delegated records on a parent that work was delegated to a child task,
// subagent, job or worker (task.delegated).
func Delegated(parent *tasksv1.Task, rel tasksv1.EdgeRelation, targetKind, targetID, reason string, now time.Time) *eventsv1.RuntimeEvent {
	ev := taskEvent(parent, TypeTaskDelegated, now)
	ev.Payload = &eventsv1.RuntimeEvent_TaskDelegated{TaskDelegated: &eventsv1.TaskDelegated{Relation: rel, TargetId: targetID, TargetKind: targetKind, Reason: reason}}
	return ev
}

// PathExists reports whether following BLOCKED_BY edges from `from`
// reaches `to`; next returns a task's unremoved blockers. Adding
// "a BLOCKED_BY b" closes a cycle exactly when PathExists(b, a).
func PathExists(from, to string, next func(string) ([]string, error)) (bool, error) {
	seen := map[string]bool{from: true}
	stack := []string{from}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if cur == to {
			return true, nil
		}
		nbrs, err := next(cur)
		if err != nil {
			return false, err
		}
		for _, n := range nbrs {
			if !seen[n] {
				seen[n] = true
				stack = append(stack, n)
			}
		}
	}
	return false, nil
}

// CycleError is the error of a BLOCKED_BY edge that would close a cycle.
func CycleError(task, blocker string) error {
	return &fault.Error{Kind: fault.KindPrecondition,
		Reason:   ReasonDependencyCycle,
		Subject:  "task/" + task,
		Message:  fmt.Sprintf("%s blocked_by %s would close a dependency cycle (%s already depends on %s)", task, blocker, blocker, task),
		Metadata: map[string]string{"task_id": task, "blocked_by": blocker},
	}
}

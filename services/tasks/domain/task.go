package domain

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/fairshare"
	"github.com/agentruntime/agentruntime/pkg/fault"
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
	// Class is how PollTask hands the task out (defaults applied) and
	// FairTag its place among its priority's tasks (fairshare.Queue.Tag),
	// recorded in task.created.
	Class   fairshare.Class
	FairTag float64
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
	t.Priority, t.FairnessKey, t.FairnessWeight = c.Class.Priority, c.Class.Key, c.Class.Weight
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
	created.Payload = &eventsv1.RuntimeEvent_TaskCreated{TaskCreated: &eventsv1.TaskCreated{Task: t, IdempotencyKey: c.IdempotencyKey, FairTag: c.FairTag}}
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

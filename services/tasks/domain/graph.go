// The task graph: edges, blockers, dependency updates, delegations, cycles.

package domain

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

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

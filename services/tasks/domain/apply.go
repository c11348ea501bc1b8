package domain

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/fairshare"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

func protoName(s string) protoreflect.Name { return protoreflect.Name(s) }

// Apply folds one of a task's events into its record and returns the new
// record (t is not modified; nil before task.created). It is the only way a
// record changes, so the read model, replays and rebuilds agree.
func Apply(t *tasksv1.Task, ev *eventsv1.RuntimeEvent) *tasksv1.Task {
	if ev.GetType() == TypeTaskCreated {
		next := proto.Clone(ev.GetTaskCreated().GetTask()).(*tasksv1.Task)
		// A task created before classes were recorded reads the defaults.
		c := TaskClass(next)
		next.Priority, next.FairnessKey, next.FairnessWeight = c.Priority, c.Key, c.Weight
		next.CreatedSequence = ev.GetSequence()
		next.Version = ev.GetSequence()
		return next
	}
	if t == nil {
		return nil
	}
	next := proto.Clone(t).(*tasksv1.Task)
	ts := ev.GetTimestamp()
	next.UpdatedAt = ts
	next.Version = ev.GetSequence()
	if tr := TransitionOf(ev); tr != nil {
		applyTransition(next, ev.GetType(), tr, ts)
		return next
	}
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_TaskUpdated:
		next.Spec = p.TaskUpdated.GetSpec()
		if ns := p.TaskUpdated.GetSpec().GetNativeStatus(); ns != "" {
			next.NativeStatus = ns
		}
	case *eventsv1.RuntimeEvent_TaskProgress:
		applyProgress(next, p.TaskProgress, ts)
	case *eventsv1.RuntimeEvent_TaskCancelRequested:
		next.CancelRequested = true
		next.Status = p.TaskCancelRequested.GetTo()
		next.StatusReason = p.TaskCancelRequested.GetReason()
	case *eventsv1.RuntimeEvent_TaskCompleted:
		c := p.TaskCompleted
		next.Status = Completed
		next.StatusReason = ""
		next.EndedAt = ts
		next.Artifacts = appendUnique(next.Artifacts, c.GetArtifacts()...)
		next.EvidenceRefs = appendUnique(next.EvidenceRefs, c.GetEvidenceRefs()...)
		if c.GetNativeStatus() != "" {
			next.NativeStatus = c.GetNativeStatus()
		}
	case *eventsv1.RuntimeEvent_TaskDependencyUpdated:
		d := p.TaskDependencyUpdated
		upsertEdge(next, d.GetEdge())
		if d.GetTo() != tasksv1.TaskStatus_TASK_STATUS_UNSPECIFIED {
			next.Status = d.GetTo()
		}
		if d.GetStatusReason() != "" || d.GetTo() != tasksv1.TaskStatus_TASK_STATUS_UNSPECIFIED {
			next.StatusReason = d.GetStatusReason()
		}
		if e := d.GetEdge(); e.GetStatus() != tasksv1.EdgeStatus_EDGE_STATUS_REMOVED {
			switch e.GetRelation() {
			case tasksv1.EdgeRelation_EDGE_RELATION_PRODUCED_ARTIFACT:
				next.Artifacts = appendUnique(next.Artifacts, e.GetTargetId())
			case tasksv1.EdgeRelation_EDGE_RELATION_EVIDENCE:
				next.EvidenceRefs = appendUnique(next.EvidenceRefs, e.GetTargetId())
			case tasksv1.EdgeRelation_EDGE_RELATION_PARENT:
				next.ParentTaskId = e.GetTargetId()
			}
		} else if e.GetRelation() == tasksv1.EdgeRelation_EDGE_RELATION_PARENT {
			next.ParentTaskId = ""
		}
	case *eventsv1.RuntimeEvent_TaskDelegated:
		applyDelegated(next, ev)
	case *eventsv1.RuntimeEvent_TaskAttemptStarted:
		a := proto.Clone(p.TaskAttemptStarted.GetAttempt()).(*tasksv1.Attempt)
		next.Attempts = append(next.Attempts, a)
		next.CurrentRunId = a.GetRunId()
		next.NotBefore = nil
		if next.StartedAt == nil {
			next.StartedAt = ts
		}
		next.EndedAt = nil
	case *eventsv1.RuntimeEvent_TaskAttemptCompleted:
		if a := attempt(next, ev.GetRunId()); a != nil {
			c := p.TaskAttemptCompleted
			a.Status = tasksv1.RunStatus_RUN_STATUS_COMPLETED
			a.EndedAt = ts
			a.CompletionSummary = c.GetSummary()
			a.OutputRefs = append(a.OutputRefs, c.GetOutputRefs()...)
			a.CheckpointRefs = appendUnique(a.CheckpointRefs, c.GetCheckpointRefs()...)
		}
		next.CurrentRunId = ""
	case *eventsv1.RuntimeEvent_TaskAttemptFailed:
		f := p.TaskAttemptFailed
		if a := attempt(next, ev.GetRunId()); a != nil {
			a.Status = f.GetStatus()
			a.EndedAt = ts
			a.Error = f.GetError()
			a.OutputRefs = append(a.OutputRefs, f.GetOutputRefs()...)
			a.CheckpointRefs = appendUnique(a.CheckpointRefs, f.GetCheckpointRefs()...)
		}
		next.LastError = f.GetError()
		next.CurrentRunId = ""
	}
	return next
}

func applyTransition(t *tasksv1.Task, typ string, tr *eventsv1.TaskTransition, ts *timestamppb.Timestamp) {
	if typ == TypeTaskPaused {
		t.PausedFrom = t.GetStatus()
	}
	if typ == TypeTaskResumed {
		t.PausedFrom = tasksv1.TaskStatus_TASK_STATUS_UNSPECIFIED
	}
	t.Status = tr.GetTo()
	t.StatusReason = tr.GetReason()
	if tr.GetNativeStatus() != "" {
		t.NativeStatus = tr.GetNativeStatus()
	}
	if tr.GetError() != nil {
		t.LastError = tr.GetError()
	}
	switch typ {
	case TypeTaskRetrying:
		t.NotBefore = tr.GetNotBefore()
		t.EndedAt = nil
	case TypeTaskCancelled, TypeTaskTimedOut, TypeTaskFailed, TypeTaskLost:
		t.EndedAt = ts
	case TypeTaskStarted:
		t.StatusReason = ""
	}
}

func applyProgress(t *tasksv1.Task, p *eventsv1.TaskProgressed, ts *timestamppb.Timestamp) {
	if p.GetTo() != tasksv1.TaskStatus_TASK_STATUS_UNSPECIFIED {
		t.Status = p.GetTo()
		t.StatusReason = ""
	}
	t.Artifacts = appendUnique(t.Artifacts, p.GetArtifacts()...)
	t.EvidenceRefs = appendUnique(t.EvidenceRefs, p.GetEvidenceRefs()...)
	if a := CurrentAttempt(t); a != nil {
		a.LastActivityAt = ts
		a.CheckpointRefs = appendUnique(a.CheckpointRefs, p.GetCheckpointRefs()...)
		a.OutputRefs = append(a.OutputRefs, p.GetProgress().GetOutputRefs()...)
	}
	in := p.GetProgress()
	if in == nil {
		return
	}
	cur := t.GetProgress()
	if cur == nil {
		cur = &tasksv1.Progress{}
		t.Progress = cur
	}
	if in.GetPhase() != "" {
		cur.Phase = in.GetPhase()
	}
	if in.GetCurrentStep() != "" {
		cur.CurrentStep = in.GetCurrentStep()
	}
	if in.GetSummary() != "" {
		cur.Summary = in.GetSummary()
	}
	if in.GetPercent() != 0 {
		cur.Percent = in.GetPercent()
	}
	if len(in.GetCounters()) > 0 {
		if cur.Counters == nil {
			cur.Counters = map[string]int64{}
		}
		maps.Copy(cur.Counters, in.GetCounters())
	}
	cur.OutputRefs = append(cur.OutputRefs, in.GetOutputRefs()...)
	if len(in.GetOutputOffsets()) > 0 {
		if cur.OutputOffsets == nil {
			cur.OutputOffsets = map[string]int64{}
		}
		for k, v := range in.GetOutputOffsets() {
			// Offsets of append-only outputs only move forward; a late or
			// replayed report cannot rewind them.
			cur.OutputOffsets[k] = max(cur.OutputOffsets[k], v)
		}
	}
	if in.GetDeliveryState() != tasksv1.DeliveryState_DELIVERY_STATE_UNSPECIFIED {
		cur.DeliveryState = in.GetDeliveryState()
	}
	if in.GetValidationState() != "" {
		cur.ValidationState = in.GetValidationState()
	}
}

func attempt(t *tasksv1.Task, runID string) *tasksv1.Attempt {
	for _, a := range t.GetAttempts() {
		if a.GetRunId() == runID {
			return a
		}
	}
	return nil
}

func upsertEdge(t *tasksv1.Task, e *tasksv1.Edge) {
	for i, x := range t.GetEdges() {
		if x.GetRelation() == e.GetRelation() && x.GetTargetId() == e.GetTargetId() {
			t.Edges[i] = proto.Clone(e).(*tasksv1.Edge)
			return
		}
	}
	t.Edges = append(t.Edges, proto.Clone(e).(*tasksv1.Edge))
}

func appendUnique(dst []string, vals ...string) []string {
	for _, v := range vals {
		if v != "" && !slices.Contains(dst, v) {
			dst = append(dst, v)
		}
	}
	return dst
}

// TaskClass is how PollTask hands a task out, defaults applied: priority
// 3, the task's session as its key, weight 1 where the record has none.
func TaskClass(t *tasksv1.Task) fairshare.Class {
	return fairshare.Resolve(t.GetPriority(), t.GetFairnessKey(), t.GetFairnessWeight(), t.GetSessionId())
}

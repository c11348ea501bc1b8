package domain

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

// Event types this package writes, by the names the tasks domain uses
// (the strings are pkg/events' constants, held to the registry there).
const (
	TypeTaskCreated           = events.TypeTaskCreated
	TypeTaskAccepted          = events.TypeTaskAccepted
	TypeTaskQueued            = events.TypeTaskQueued
	TypeTaskStarted           = events.TypeTaskStarted
	TypeTaskUpdated           = events.TypeTaskUpdated
	TypeTaskProgress          = events.TypeTaskProgress
	TypeTaskWaiting           = events.TypeTaskWaiting
	TypeTaskBlocked           = events.TypeTaskBlocked
	TypeTaskPaused            = events.TypeTaskPaused
	TypeTaskResumed           = events.TypeTaskResumed
	TypeTaskRetrying          = events.TypeTaskRetrying
	TypeTaskCancelRequested   = events.TypeTaskCancelRequested
	TypeTaskCancelled         = events.TypeTaskCancelled
	TypeTaskTimedOut          = events.TypeTaskTimedOut
	TypeTaskFailed            = events.TypeTaskFailed
	TypeTaskLost              = events.TypeTaskLost
	TypeTaskCompleted         = events.TypeTaskCompleted
	TypeTaskArchived          = events.TypeTaskArchived
	TypeTaskDelegated         = events.TypeTaskDelegated
	TypeTaskDependencyUpdated = events.TypeTaskDependencyUpdated
	TypeAttemptStarted        = events.TypeTaskAttemptStarted
	TypeAttemptCompleted      = events.TypeTaskAttemptCompleted
	TypeAttemptFailed         = events.TypeTaskAttemptFailed

	TypeJobCreated       = events.TypeJobCreated
	TypeJobStarted       = events.TypeJobStarted
	TypeJobProgress      = events.TypeJobProgress
	TypeJobItemStarted   = events.TypeJobItemStarted
	TypeJobItemCompleted = events.TypeJobItemCompleted
	TypeJobItemFailed    = events.TypeJobItemFailed
	TypeJobCompleted     = events.TypeJobCompleted
	TypeJobFailed        = events.TypeJobFailed
	TypeJobCancelled     = events.TypeJobCancelled
)

// taskEvent is an envelope scoped to a task (and its session, thread and
// turn when it has them).
func taskEvent(t *tasksv1.Task, typ string, now time.Time) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{
		Type:      typ,
		Timestamp: timestamppb.New(now),
		TaskId:    t.GetTaskId(),
		SessionId: t.GetSessionId(),
		ThreadId:  t.GetThreadId(),
		TurnId:    t.GetTurnId(),
	}
}

func attemptEvent(t *tasksv1.Task, typ, runID, attemptID string, now time.Time) *eventsv1.RuntimeEvent {
	ev := taskEvent(t, typ, now)
	ev.RunId, ev.AttemptId = runID, attemptID
	return ev
}

// transition builds the event of a status class whose payload is a
// TaskTransition.
func transition(t *tasksv1.Task, typ string, tr *eventsv1.TaskTransition, now time.Time) *eventsv1.RuntimeEvent {
	ev := taskEvent(t, typ, now)
	if tr.From == tasksv1.TaskStatus_TASK_STATUS_UNSPECIFIED {
		tr.From = t.GetStatus()
	}
	switch typ {
	case TypeTaskAccepted:
		ev.Payload = &eventsv1.RuntimeEvent_TaskAccepted{TaskAccepted: tr}
	case TypeTaskQueued:
		ev.Payload = &eventsv1.RuntimeEvent_TaskQueued{TaskQueued: tr}
	case TypeTaskStarted:
		ev.Payload = &eventsv1.RuntimeEvent_TaskStarted{TaskStarted: tr}
	case TypeTaskWaiting:
		ev.Payload = &eventsv1.RuntimeEvent_TaskWaiting{TaskWaiting: tr}
	case TypeTaskBlocked:
		ev.Payload = &eventsv1.RuntimeEvent_TaskBlocked{TaskBlocked: tr}
	case TypeTaskPaused:
		ev.Payload = &eventsv1.RuntimeEvent_TaskPaused{TaskPaused: tr}
	case TypeTaskResumed:
		ev.Payload = &eventsv1.RuntimeEvent_TaskResumed{TaskResumed: tr}
	case TypeTaskRetrying:
		ev.Payload = &eventsv1.RuntimeEvent_TaskRetrying{TaskRetrying: tr}
	case TypeTaskCancelled:
		ev.Payload = &eventsv1.RuntimeEvent_TaskCancelled{TaskCancelled: tr}
	case TypeTaskTimedOut:
		ev.Payload = &eventsv1.RuntimeEvent_TaskTimedOut{TaskTimedOut: tr}
	case TypeTaskFailed:
		ev.Payload = &eventsv1.RuntimeEvent_TaskFailed{TaskFailed: tr}
	case TypeTaskLost:
		ev.Payload = &eventsv1.RuntimeEvent_TaskLost{TaskLost: tr}
	case TypeTaskArchived:
		ev.Payload = &eventsv1.RuntimeEvent_TaskArchived{TaskArchived: tr}
	default:
		panic("domain: " + typ + " has no TaskTransition payload")
	}
	return ev
}

// TransitionOf returns the TaskTransition payload of a status event, nil
// for other classes.
func TransitionOf(ev *eventsv1.RuntimeEvent) *eventsv1.TaskTransition {
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_TaskAccepted:
		return p.TaskAccepted
	case *eventsv1.RuntimeEvent_TaskQueued:
		return p.TaskQueued
	case *eventsv1.RuntimeEvent_TaskStarted:
		return p.TaskStarted
	case *eventsv1.RuntimeEvent_TaskWaiting:
		return p.TaskWaiting
	case *eventsv1.RuntimeEvent_TaskBlocked:
		return p.TaskBlocked
	case *eventsv1.RuntimeEvent_TaskPaused:
		return p.TaskPaused
	case *eventsv1.RuntimeEvent_TaskResumed:
		return p.TaskResumed
	case *eventsv1.RuntimeEvent_TaskRetrying:
		return p.TaskRetrying
	case *eventsv1.RuntimeEvent_TaskCancelled:
		return p.TaskCancelled
	case *eventsv1.RuntimeEvent_TaskTimedOut:
		return p.TaskTimedOut
	case *eventsv1.RuntimeEvent_TaskFailed:
		return p.TaskFailed
	case *eventsv1.RuntimeEvent_TaskLost:
		return p.TaskLost
	case *eventsv1.RuntimeEvent_TaskArchived:
		return p.TaskArchived
	}
	return nil
}

func jobEvent(j *tasksv1.Job, typ string, now time.Time) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{
		Type:      typ,
		Timestamp: timestamppb.New(now),
		JobId:     j.GetJobId(),
		TaskId:    j.GetTaskId(),
		SessionId: j.GetSessionId(),
	}
}

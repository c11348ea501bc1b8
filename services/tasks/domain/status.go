package domain

import (
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

type S = tasksv1.TaskStatus

const (
	Draft             = tasksv1.TaskStatus_TASK_STATUS_DRAFT
	Accepted          = tasksv1.TaskStatus_TASK_STATUS_ACCEPTED
	Queued            = tasksv1.TaskStatus_TASK_STATUS_QUEUED
	Preparing         = tasksv1.TaskStatus_TASK_STATUS_PREPARING
	Running           = tasksv1.TaskStatus_TASK_STATUS_RUNNING
	WaitingInput      = tasksv1.TaskStatus_TASK_STATUS_WAITING_INPUT
	WaitingPermission = tasksv1.TaskStatus_TASK_STATUS_WAITING_PERMISSION
	WaitingResource   = tasksv1.TaskStatus_TASK_STATUS_WAITING_RESOURCE
	Blocked           = tasksv1.TaskStatus_TASK_STATUS_BLOCKED
	Paused            = tasksv1.TaskStatus_TASK_STATUS_PAUSED
	Retrying          = tasksv1.TaskStatus_TASK_STATUS_RETRYING
	Cancelling        = tasksv1.TaskStatus_TASK_STATUS_CANCELLING
	Cancelled         = tasksv1.TaskStatus_TASK_STATUS_CANCELLED
	TimedOut          = tasksv1.TaskStatus_TASK_STATUS_TIMED_OUT
	Failed            = tasksv1.TaskStatus_TASK_STATUS_FAILED
	Lost              = tasksv1.TaskStatus_TASK_STATUS_LOST
	Completed         = tasksv1.TaskStatus_TASK_STATUS_COMPLETED
	Archived          = tasksv1.TaskStatus_TASK_STATUS_ARCHIVED
	Stale             = tasksv1.TaskStatus_TASK_STATUS_STALE
	Unknown           = tasksv1.TaskStatus_TASK_STATUS_UNKNOWN
)

// AllStatuses are the 20 normalized statuses of the spec.
var AllStatuses = []S{
	Draft, Accepted, Queued, Preparing, Running, WaitingInput, WaitingPermission, WaitingResource,
	Blocked, Paused, Retrying, Cancelling, Cancelled, TimedOut, Failed, Lost, Completed, Archived,
	Stale, Unknown,
}

// Command names a lifecycle command (the spec's control-plane names, plus
// the runtime's own: timeout, lose, block, link, resolve_dependency,
// spawn_child).
type Command string

const (
	CmdSubmit   Command = "submit"
	CmdUpdate   Command = "update"
	CmdStart    Command = "start"
	CmdProgress Command = "progress"
	CmdPause    Command = "pause"
	CmdResume   Command = "resume"
	CmdCancel   Command = "cancel"
	CmdRetry    Command = "retry"
	CmdComplete Command = "complete"
	CmdFail     Command = "fail"
	CmdArchive  Command = "archive"
	// CmdTimeout: a run or inactivity limit fired (the sweeper).
	CmdTimeout Command = "timeout"
	// CmdLose: the run's lease expired (the sweeper).
	CmdLose Command = "lose"
	// CmdBlock: add a BLOCKED_BY edge.
	CmdBlock Command = "block"
	// CmdLink: add or remove any other edge.
	CmdLink Command = "link"
	// CmdSpawnChild: create a child task under this one (checked on the
	// parent).
	CmdSpawnChild Command = "spawn_child"
)

// AllCommands in a stable order.
var AllCommands = []Command{
	CmdSubmit, CmdUpdate, CmdStart, CmdProgress, CmdPause, CmdResume, CmdCancel, CmdRetry,
	CmdComplete, CmdFail, CmdArchive, CmdTimeout, CmdLose, CmdBlock, CmdLink, CmdSpawnChild,
}

var (
	// runStates have an active run making (or able to make) progress.
	runStates = []S{Preparing, Running, WaitingInput, WaitingPermission, WaitingResource}
	// terminalStates end a task's execution; retry reopens the first four.
	terminalStates = []S{Cancelled, TimedOut, Failed, Lost, Completed}
	retryable      = []S{Cancelled, TimedOut, Failed, Lost}
	// open: neither terminal, archived, nor a read-only status.
	open = concat([]S{Draft, Accepted, Queued, Blocked, Paused, Retrying, Cancelling}, runStates)
)

func concat(parts ...[]S) []S {
	var out []S
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// allowed is the transition table: the statuses in which each command may
// run at all. Some commands then check more (a run id, blockers, the
// acceptance criteria). STALE and UNKNOWN are never stored on a task: every
// command refuses them.
var allowed = map[Command][]S{
	CmdSubmit:     {Draft},
	CmdUpdate:     concat([]S{Draft, Accepted, Queued, Blocked, Paused, Retrying}, runStates),
	CmdStart:      {Accepted, Queued, Retrying},
	CmdProgress:   concat(runStates, []S{Paused, Cancelling}),
	CmdPause:      concat([]S{Accepted, Queued, Blocked, Retrying}, runStates),
	CmdResume:     {Paused},
	CmdCancel:     open,
	CmdRetry:      retryable,
	CmdComplete:   concat(runStates, []S{Paused, Cancelling}),
	CmdFail:       concat(runStates, []S{Paused, Cancelling}),
	CmdArchive:    terminalStates,
	CmdTimeout:    concat(runStates, []S{Paused, Cancelling}),
	CmdLose:       concat(runStates, []S{Paused, Cancelling}),
	CmdBlock:      {Draft, Accepted, Queued, Blocked, Paused, Retrying},
	CmdLink:       concat(open, terminalStates),
	CmdSpawnChild: concat([]S{Draft, Accepted, Queued, Blocked, Paused, Retrying}, runStates),
}

// Allowed returns the statuses in which cmd may run.
func Allowed(cmd Command) []S { return allowed[cmd] }

func in(s S, set []S) bool {
	for _, x := range set {
		if x == s {
			return true
		}
	}
	return false
}

// IsTerminal: the task's execution ended (archived included).
func IsTerminal(s S) bool { return in(s, terminalStates) || s == Archived }

// IsRunState: an active run is making progress.
func IsRunState(s S) bool { return in(s, runStates) }

// IsWaiting: waiting for input, permission or a resource.
func IsWaiting(s S) bool { return s == WaitingInput || s == WaitingPermission || s == WaitingResource }

// Runnable: a worker may start the task now (blockers aside).
func Runnable(t *tasksv1.Task) bool {
	return in(t.GetStatus(), allowed[CmdStart]) && !t.GetCancelRequested() && len(UnfinishedBlockers(t)) == 0
}

func check(t *tasksv1.Task, cmd Command) error {
	if !in(t.GetStatus(), allowed[cmd]) {
		return illegal(t, cmd)
	}
	return nil
}

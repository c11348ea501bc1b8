// Package domain holds the tasks service's rules with no I/O: the task
// lifecycle state machine, attempts and retry policy, the task graph's
// dependency rules and the job state machine. Each decision takes the
// current record (a fold of the aggregate's events, see Apply) and a
// command, and returns the events to append or an error saying why not.
package domain

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/fault"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

// Stable reasons of the service's fault.KindPrecondition errors
// (google.rpc.ErrorInfo.reason).
const (
	ReasonIllegalTransition    = "ILLEGAL_TRANSITION"
	ReasonTaskBlocked          = "TASK_BLOCKED"
	ReasonAcceptanceNotMet     = "ACCEPTANCE_NOT_MET"
	ReasonRunMismatch          = "RUN_MISMATCH"
	ReasonParentCancelled      = "PARENT_CANCELLED"
	ReasonDependencyCycle      = "DEPENDENCY_CYCLE"
	ReasonEdgeNotFound         = "EDGE_NOT_FOUND"
	ReasonItemAlreadyCompleted = "ITEM_ALREADY_COMPLETED"
	ReasonItemNotRetryable     = "ITEM_NOT_RETRYABLE"
	ReasonIllegalItemState     = "ILLEGAL_ITEM_TRANSITION"
	ReasonJobEnded             = "JOB_ENDED"
	ReasonLeaseLost            = "LEASE_LOST"
)

// StatusName is the spec's lowercase name of a status ("timed_out").
func StatusName(s tasksv1.TaskStatus) string {
	return enums.Word(s)
}

func statusList(ss []tasksv1.TaskStatus) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = StatusName(s)
	}
	switch len(names) {
	case 0:
		return "no status"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// illegal builds the error of a command the status does not allow, naming
// the statuses that would: "task is completed; retry needs failed,
// cancelled, timed_out or lost".
func illegal(t *tasksv1.Task, cmd Command) error {
	allowed := Allowed(cmd)
	return &fault.Error{Kind: fault.KindPrecondition,
		Reason:  ReasonIllegalTransition,
		Subject: "task/" + t.GetTaskId(),
		Message: fmt.Sprintf("task is %s; %s needs %s", StatusName(t.GetStatus()), cmd, statusList(allowed)),
		Metadata: map[string]string{
			"command": string(cmd),
			"status":  StatusName(t.GetStatus()),
			"allowed": joinStatuses(allowed),
		},
	}
}

func joinStatuses(ss []tasksv1.TaskStatus) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = StatusName(s)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// IllegalStart: another worker holds the task's lease (it is starting or
// running it).
func IllegalStart(t *tasksv1.Task) error {
	return &fault.Error{Kind: fault.KindPrecondition,
		Reason:   ReasonIllegalTransition,
		Subject:  "task/" + t.GetTaskId(),
		Message:  fmt.Sprintf("task is %s and another worker holds its lease; start needs an unleased %s task", StatusName(t.GetStatus()), statusList(Allowed(CmdStart))),
		Metadata: map[string]string{"command": string(CmdStart), "status": StatusName(t.GetStatus()), "allowed": joinStatuses(Allowed(CmdStart))},
	}
}

// LeaseLost: the run's lease expired or was never the caller's; the worker
// must stop (its run is, or will be, marked lost).
func LeaseLost(t *tasksv1.Task, runID string) error {
	return &fault.Error{Kind: fault.KindPrecondition,
		Reason:   ReasonLeaseLost,
		Subject:  "task/" + t.GetTaskId(),
		Message:  fmt.Sprintf("run %s holds no lease on task %s (expired or superseded); stop working on it", runID, t.GetTaskId()),
		Metadata: map[string]string{"run_id": runID, "current_run_id": t.GetCurrentRunId(), "status": StatusName(t.GetStatus())},
	}
}

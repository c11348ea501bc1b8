package api

import (
	"context"
	"time"

	"github.com/agentruntime/agentruntime/pkg/auth"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/held"
)

// A worker reads only the tasks of the sessions it holds, and the task
// whose run it holds (docs/security.md, "Workers read only the sessions
// they hold"). A worker's poll holds the run it is handed, for the run's
// lease, and its heartbeats renew it: control then lets the worker's
// submit of the run's turn hold the turn's session (pkg/held).

// checkTaskHeld refuses a worker's read of t unless it holds a run of t
// or t's session: PermissionDenied SESSION_NOT_HELD.
func checkTaskHeld(ctx context.Context, h *held.Store, p auth.Principal, t *tasksv1.Task) error {
	if !auth.ScopedToHeldSessions(p) {
		return nil
	}
	for _, at := range t.GetAttempts() {
		if _, ok, err := h.RunSession(ctx, p, at.GetRunId()); err != nil || ok {
			return err
		}
	}
	return h.CheckSession(ctx, p, t.GetSessionId(), "task_id")
}

// holdPolledRun records that the worker holds the run its poll handed
// out, until the run's lease expires.
func holdPolledRun(ctx context.Context, h *held.Store, p auth.Principal, t *tasksv1.Task, runID string, expires time.Time) error {
	return h.HoldRun(ctx, p, runID, t.GetSessionId(), time.Until(expires))
}

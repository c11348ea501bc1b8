package api

import (
	"context"

	"github.com/agentruntime/agentruntime/pkg/auth"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
)

// A worker reads the permission state, sandbox profile and execution
// environment only of a session it holds (docs/security.md, "Workers read
// only the sessions they hold"); a target of no session (a workspace's or
// the tenant's policy) is a read across sessions, refused to a worker.

// checkTargetHeld refuses a worker's read of a target whose session it
// does not hold: PermissionDenied SESSION_NOT_HELD.
func (h *Handler) checkTargetHeld(ctx context.Context, p auth.Principal, t *permissionv1.Target) error {
	return h.Held.CheckSession(ctx, p, t.GetSessionId(), "target.session_id")
}

package app

import (
	"context"
	"strings"
	"time"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/held"
)

// Workers read only the sessions they hold (docs/security.md): a worker
// principal's claim of a turn of a session, its heartbeat and its submit
// of the turn of a task run it holds hold the session for the caller's
// subject, in the store of holds every service reads (pkg/held), for as
// long as that lease (DefaultTurnLease for a submit). The session reads
// the matrix opens to workers (GetSession, GetThreadRead, ListSubagents,
// GetTurnAttempts, ReadOutput, SubscribeEvents) are answered to a worker
// only while its subject holds the session; a tenant-wide subscription
// never. Other roles read their whole tenant.

// HeldSessionKey is the key under which subject holds session in the
// store of holds (pkg/held).
func HeldSessionKey(tenant, session, subject string) string {
	return held.SessionKey(tenant, session, subject)
}

// holds is the store of what workers hold: the one shared with the other
// services, else the claims' own lease store.
func (cl *Claims) holds() *held.Store {
	if cl.Held != nil {
		return cl.Held
	}
	return held.New(cl.Leases)
}

// HoldSession records that c holds session for ttl from now, when c is
// a worker (nothing otherwise). A later hold with a shorter ttl shortens
// it: the next heartbeat of a longer claim extends it again.
func (cl *Claims) HoldSession(ctx context.Context, c Caller, session string, ttl time.Duration) error {
	return cl.holds().HoldSession(ctx, c, session, ttl)
}

// CheckHeld refuses a worker's read of session unless its subject holds
// the session (HoldSession): PermissionDenied SESSION_NOT_HELD. An empty
// session is a read across the tenant, refused to a worker naming
// session_id.
func (cl *Claims) CheckHeld(ctx context.Context, c Caller, session string) error {
	return cl.holds().CheckSession(ctx, c, session, "session_id")
}

// Held wraps a read of one session (named by session) so that a worker
// reads it only while it holds the session (CheckHeld).
func Held[Req, Resp any](cl *Claims, session func(Req) string, read func(context.Context, Caller, Req) (Resp, error)) func(context.Context, Caller, Req) (Resp, error) {
	return func(ctx context.Context, c Caller, req Req) (Resp, error) {
		if err := cl.CheckHeld(ctx, c, session(req)); err != nil {
			var zero Resp
			return zero, err
		}
		return read(ctx, c, req)
	}
}

// ReadOutputHeld is ReadOutput confined, for a worker, to the outputs of
// the sessions it holds: an object under "output/<tenant>/<session>/"
// (StoreOutput, WriteProcessStdin) of a held session. Any other object
// (evidence packs, hook outputs) is refused to a worker.
func (cl *Claims) ReadOutputHeld(ctx context.Context, c Caller, req *controlv1.ReadOutputRequest) (*controlv1.ReadOutputResponse, error) {
	if auth.ScopedToHeldSessions(c) {
		session := outputSession(req.GetUri())
		if session == "" {
			return nil, fault.PermissionDenied(auth.ReasonSessionNotHeld,
				"a worker reads only the outputs of the sessions it holds; "+req.GetUri()+" is no session's output",
				map[string]string{"uri": req.GetUri(), "subject": c.Subject})
		}
		if err := cl.CheckHeld(ctx, c, session); err != nil {
			return nil, err
		}
	}
	return cl.App.ReadOutput(ctx, c, req)
}

// outputSession is the session of an output's uri
// ("object://<bucket>/output/<tenant>/<session>/..."), "" when it is no
// output of a session.
func outputSession(uri string) string {
	rest, ok := strings.CutPrefix(uri, "object://")
	if !ok {
		return ""
	}
	parts := strings.SplitN(rest, "/", 5) // bucket, kind, tenant, session, rest
	if len(parts) < 5 || parts[1] != "output" || parts[3] == "" || parts[4] == "" {
		return ""
	}
	return parts[3]
}

// SubmitTurn is App.SubmitTurn, and a worker's submit of the turn of a
// task run it holds (metadata task_run_id; the tasks service records the
// run's holder at its poll and heartbeats, pkg/held) holds the turn's
// session for DefaultTurnLease: a worker runs a polled task run as a turn
// it submits and follows that turn to its end (pkg/worker, RunTask). The
// session must be the task's own when the task has one. Any other submit
// of a worker holds nothing: submitting to a session is no way to read it.
func (cl *Claims) SubmitTurn(ctx context.Context, c Caller, req *controlv1.SubmitTurnRequest) (*controlv1.SubmitTurnResponse, error) {
	resp, err := cl.App.SubmitTurn(ctx, c, req)
	if err != nil {
		return nil, err
	}
	if !auth.ScopedToHeldSessions(c) {
		return resp, nil
	}
	session := resp.GetTurn().GetSessionId()
	taskSession, ok, err := cl.holds().RunSession(ctx, c, req.GetMetadata()[TaskRunMetadata])
	if err != nil {
		return nil, err
	}
	if !ok || (taskSession != "" && taskSession != session) {
		return resp, nil
	}
	if err := cl.HoldSession(ctx, c, session, DefaultTurnLease); err != nil {
		return nil, err
	}
	return resp, nil
}

// TaskRunMetadata is the submit metadata key naming the task run a turn
// runs (pkg/worker, RunTask).
const TaskRunMetadata = "task_run_id"

package app

import (
	"context"
	"strings"
	"time"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// Workers read only the sessions they hold (docs/security.md): a worker
// principal's claim of a turn of a session, its heartbeat and its submit
// of a turn to a session (a task run it runs as a turn) hold the session
// for the caller's subject, in the lease store, for as long as that lease
// (DefaultTurnLease for a submit). The session reads the matrix opens to
// workers (GetSession, GetThreadRead, ListSubagents, GetTurnAttempts,
// ReadOutput, SubscribeEvents) are answered to a worker only while its
// subject holds the session; a tenant-wide subscription never. Other roles
// read their whole tenant.

// HeldSessionKey is the lease key under which subject holds session: its
// holder is the subject. Tenant and session ids hold no ':'.
func HeldSessionKey(tenant, session, subject string) string {
	return "held:" + tenant + ":" + session + ":" + subject
}

// HoldSession records that c holds session for ttl from now, when c is
// a worker (nothing otherwise). A later hold with a shorter ttl shortens
// it: the next heartbeat of a longer claim extends it again.
func (cl *Claims) HoldSession(ctx context.Context, c Caller, session string, ttl time.Duration) error {
	if !auth.ScopedToHeldSessions(c) || session == "" {
		return nil
	}
	key := HeldSessionKey(c.Tenant, session, c.Subject)
	for range 2 {
		if ok, err := cl.Leases.Renew(ctx, key, c.Subject, ttl); err != nil || ok {
			return err
		}
		if ok, err := cl.Leases.Acquire(ctx, key, c.Subject, ttl); err != nil || ok {
			return err
		}
		// Another call of the same subject took it between the two: renew.
	}
	return nil
}

// CheckHeld refuses a worker's read of session unless its subject holds
// the session (HoldSession): PermissionDenied SESSION_NOT_HELD. An empty
// session is a read across the tenant, refused to a worker naming
// session_id.
func (cl *Claims) CheckHeld(ctx context.Context, c Caller, session string) error {
	if !auth.ScopedToHeldSessions(c) {
		return nil
	}
	if session == "" {
		return fault.PermissionDenied(auth.ReasonSessionNotHeld,
			"a worker reads only the sessions it holds: session_id is required (a worker does not follow the whole tenant)",
			map[string]string{"field": "session_id", "subject": c.Subject})
	}
	holder, held, err := cl.Leases.Holder(ctx, HeldSessionKey(c.Tenant, session, c.Subject))
	if err != nil {
		return err
	}
	if held && holder == c.Subject {
		return nil
	}
	return fault.PermissionDenied(auth.ReasonSessionNotHeld,
		"worker "+c.Subject+" holds no claim or run in session "+session+": a worker reads only the sessions it holds work in",
		map[string]string{"session_id": session, "subject": c.Subject})
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

// SubmitTurn is App.SubmitTurn, and a worker's submit holds the turn's
// session for DefaultTurnLease: a worker runs a polled task run as a turn
// it submits and follows that turn to its end (pkg/worker, RunTask).
func (cl *Claims) SubmitTurn(ctx context.Context, c Caller, req *controlv1.SubmitTurnRequest) (*controlv1.SubmitTurnResponse, error) {
	resp, err := cl.App.SubmitTurn(ctx, c, req)
	if err != nil {
		return nil, err
	}
	if err := cl.HoldSession(ctx, c, resp.GetTurn().GetSessionId(), DefaultTurnLease); err != nil {
		return nil, err
	}
	return resp, nil
}

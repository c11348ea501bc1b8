// Package held owns what a worker holds work in, for the services that
// confine a worker's reads to it (docs/security.md, "Workers read only the
// sessions they hold"): the sessions its subject holds (a claimed turn, a
// task run's turn) and the task runs it holds (a polled run), each a key
// with a ttl in one lease store that every service of a deployment reads
// (Redis under RedisPrefix in `serve`, one in-process store shared by the
// services of `dev`). Control writes session holds, tasks run holds;
// control, tasks and permission check them.
package held

import (
	"context"
	"strings"
	"time"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/lease"
)

// RedisPrefix prefixes the keys of the shared store in Redis: it belongs
// to no one service, since all of them read it.
const RedisPrefix = "agentruntime:held:"

// Store is the shared store of holds. A nil *Store knows of no holds: it
// records none and a worker reads nothing through it.
type Store struct {
	leases lease.Store
}

// New holds holds in leases.
func New(leases lease.Store) *Store { return &Store{leases: leases} }

// NewMemory is a store of its own in process: a service built without the
// shared store knows of no holds, so a worker reads nothing through it.
func NewMemory() *Store { return New(lease.NewMemory(nil)) }

// Leases is the underlying lease store.
func (s *Store) Leases() lease.Store { return s.leases }

// SessionKey is the key under which subject holds session: its holder is
// the subject. Tenant and session ids hold no ':'.
func SessionKey(tenant, session, subject string) string {
	return "session:" + tenant + ":" + session + ":" + subject
}

// RunKey is the key of a task run held by a worker: its holder is
// runHolder(subject, session).
func RunKey(tenant, runID string) string { return "run:" + tenant + ":" + runID }

// runHolder says who holds a run and for which session (empty: a task of
// no session). Subjects hold no newline.
func runHolder(subject, session string) string { return subject + "\n" + session }

// hold takes or renews key for holder for ttl.
func (s *Store) hold(ctx context.Context, key, holder string, ttl time.Duration) error {
	if s == nil {
		return nil
	}
	for range 2 {
		if ok, err := s.leases.Renew(ctx, key, holder, ttl); err != nil || ok {
			return err
		}
		if ok, err := s.leases.Acquire(ctx, key, holder, ttl); err != nil || ok {
			return err
		}
		// Another call of the same holder took it between the two: renew.
	}
	return nil
}

// HoldSession records that p holds session for ttl from now, when p is a
// worker (nothing otherwise). A later hold with a shorter ttl shortens it:
// the next heartbeat of a longer claim extends it again.
func (s *Store) HoldSession(ctx context.Context, p auth.Principal, session string, ttl time.Duration) error {
	if !auth.ScopedToHeldSessions(p) || session == "" {
		return nil
	}
	return s.hold(ctx, SessionKey(p.Tenant, session, p.Subject), p.Subject, ttl)
}

// CheckSession refuses a worker's read of session unless its subject
// holds the session: PermissionDenied SESSION_NOT_HELD. An empty session
// is a read across the tenant, refused to a worker naming field (the
// request field that would name the session).
func (s *Store) CheckSession(ctx context.Context, p auth.Principal, session, field string) error {
	if !auth.ScopedToHeldSessions(p) {
		return nil
	}
	if session == "" {
		return fault.PermissionDenied(auth.ReasonSessionNotHeld,
			"a worker reads only the sessions it holds: "+field+" is required (a worker does not read across the tenant)",
			map[string]string{"field": field, "subject": p.Subject})
	}
	if s != nil {
		holder, ok, err := s.leases.Holder(ctx, SessionKey(p.Tenant, session, p.Subject))
		if err != nil {
			return err
		}
		if ok && holder == p.Subject {
			return nil
		}
	}
	return fault.PermissionDenied(auth.ReasonSessionNotHeld,
		"worker "+p.Subject+" holds no claim or run in session "+session+": a worker reads only the sessions it holds work in",
		map[string]string{"session_id": session, "subject": p.Subject})
}

// HoldRun records that worker p holds task run runID of a task of session
// (empty: a task of no session) for ttl: its poll or heartbeat.
func (s *Store) HoldRun(ctx context.Context, p auth.Principal, runID, session string, ttl time.Duration) error {
	if !auth.ScopedToHeldSessions(p) || runID == "" {
		return nil
	}
	return s.hold(ctx, RunKey(p.Tenant, runID), runHolder(p.Subject, session), ttl)
}

// RunSession answers whether worker p holds task run runID now, and the
// session of its task (empty: a task of no session).
func (s *Store) RunSession(ctx context.Context, p auth.Principal, runID string) (session string, ok bool, err error) {
	if s == nil || runID == "" {
		return "", false, nil
	}
	holder, held, err := s.leases.Holder(ctx, RunKey(p.Tenant, runID))
	if err != nil || !held {
		return "", false, err
	}
	subject, session, found := strings.Cut(holder, "\n")
	if !found || subject != p.Subject {
		return "", false, nil
	}
	return session, true, nil
}

// RenewRun extends worker p's hold of task run runID for ttl (its
// heartbeat), when p holds it.
func (s *Store) RenewRun(ctx context.Context, p auth.Principal, runID string, ttl time.Duration) error {
	if s == nil || !auth.ScopedToHeldSessions(p) || runID == "" {
		return nil
	}
	key := RunKey(p.Tenant, runID)
	holder, ok, err := s.leases.Holder(ctx, key)
	if err != nil || !ok {
		return err
	}
	if subject, _, _ := strings.Cut(holder, "\n"); subject != p.Subject {
		return nil
	}
	_, err = s.leases.Renew(ctx, key, holder, ttl)
	return err
}

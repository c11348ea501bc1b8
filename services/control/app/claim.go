package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/control/domain"
	rm "github.com/agentruntime/agentruntime/services/control/projector"
)

// Leases hold worker leases on turns: one holder (the claim's run id) per
// key, expiring unless renewed. The tasks service's adapters satisfy it
// (Redis in a deployment, in process in dev mode) and are proven by one
// contract suite.
type Leases interface {
	Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	Renew(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, key, token string) error
	Holder(ctx context.Context, key string) (string, bool, error)
}

// DefaultTurnLease is a claim's lease when the worker names none.
const DefaultTurnLease = 30 * time.Second

// maxClaimNap bounds one wait of a claim poll for the claims projection
// to move: the thread read model can trail it by a little, and a turn
// skipped for that must be looked at again soon.
const maxClaimNap = 250 * time.Millisecond

// Claims are the worker-facing use cases: claim a turn under a lease,
// renew it, and end turns whose lease expired.
type Claims struct {
	App    *App
	Leases Leases
	Logger *slog.Logger
	now    func() time.Time
}

// NewClaims builds the claim use cases on the app and a lease store.
func NewClaims(a *App, leases Leases, logger *slog.Logger) *Claims {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Claims{App: a, Leases: leases, Logger: logger, now: time.Now}
}

// TurnLeaseKey is the lease key of a turn.
func TurnLeaseKey(tenant, turn string) string { return tenant + ":" + turn }

// ClaimTurn waits up to req.wait for an accepted, not yet started turn of
// the caller's tenant (optionally of one session), takes its lease and
// starts it: turn.started carries the worker id and the claim's run id.
// Concurrent claimers (on any replica) never start the same turn: the
// lease admits one holder, and turn.started is appended at the thread's
// expected sequence and only for an accepted turn.
func (cl *Claims) ClaimTurn(ctx context.Context, c Caller, req *controlv1.ClaimTurnRequest) (*controlv1.ClaimTurnResponse, error) {
	ttl := req.GetLeaseTtl().AsDuration()
	if ttl <= 0 {
		ttl = DefaultTurnLease
	}
	deadline := cl.now().Add(req.GetWait().AsDuration())
	for {
		seen, err := cl.App.Store.Checkpoint(ctx, rm.ClaimsName)
		if err != nil {
			return nil, err
		}
		resp, err := cl.tryClaim(ctx, c, req, ttl)
		if err != nil || resp != nil {
			return resp, err
		}
		left := deadline.Sub(cl.now())
		if left <= 0 {
			return &controlv1.ClaimTurnResponse{Sequence: seen}, nil
		}
		wctx, cancel := context.WithTimeout(ctx, min(left, maxClaimNap))
		_, err = cl.App.Store.WaitFor(wctx, rm.ClaimsName, seen+1)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
	}
}

func (cl *Claims) tryClaim(ctx context.Context, c Caller, req *controlv1.ClaimTurnRequest, ttl time.Duration) (*controlv1.ClaimTurnResponse, error) {
	index := rm.ClaimableIndex(c.Tenant)
	if s := req.GetSessionId(); s != "" {
		index = rm.ClaimableSessionIndex(c.Tenant, s)
	}
	const page = 32
	for offset := int64(0); ; offset += page {
		entries, err := cl.App.Store.Range(ctx, index, projection.RangeQuery{Offset: offset, Limit: page})
		if err != nil || len(entries) == 0 {
			return nil, err
		}
		for _, e := range entries {
			resp, err := cl.claimOne(ctx, c, req.GetWorkerId(), e.Member, ttl)
			if err != nil || resp != nil {
				return resp, err
			}
		}
		if len(entries) < page {
			return nil, nil
		}
	}
}

// claimOne tries one turn: nil, nil when it is not claimable (any more).
func (cl *Claims) claimOne(ctx context.Context, c Caller, worker, turnID string, ttl time.Duration) (*controlv1.ClaimTurnResponse, error) {
	a := cl.App
	tu, ok, err := rm.Turn(ctx, a.Store, c.Tenant, turnID)
	if err != nil || !ok || tu.Status != "accepted" {
		return nil, err // the thread read model may trail; a later poll sees it
	}
	runID := ids.New(ids.Run)
	key := TurnLeaseKey(c.Tenant, turnID)
	got, err := cl.Leases.Acquire(ctx, key, runID, ttl)
	if err != nil || !got {
		return nil, err // another worker is starting it
	}
	expires := cl.now().Add(ttl)
	res, err := a.exec.Execute(ctx, threadAgg(c.Tenant, tu.SessionId, tu.ThreadId), func(ctx context.Context, _ uint64) ([]*eventsv1.RuntimeEvent, error) {
		th, err := a.thread(ctx, c, tu.SessionId, tu.ThreadId)
		if err != nil {
			return nil, err
		}
		cur, err := a.turn(ctx, c, turnID)
		if err != nil {
			return nil, err
		}
		started := &eventsv1.RuntimeEvent{
			Type: "turn.started", EventId: ids.New(ids.Event), Timestamp: timestamppb.New(a.now()),
			TenantId: c.Tenant, SessionId: tu.SessionId, ThreadId: tu.ThreadId, TurnId: turnID, RunId: runID,
			Payload: &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: worker}},
		}
		return domain.DecideReport(th, cur, []*eventsv1.RuntimeEvent{started})
	})
	if err != nil || len(res.Appended) == 0 {
		// Nothing was written: the lease guards nothing. A refusal means
		// the turn changed under us (interrupted, started): move on.
		_ = cl.Leases.Release(context.WithoutCancel(ctx), key, runID)
		if _, refused := IsDomain(err); refused {
			return nil, nil
		}
		return nil, err
	}
	if _, err := a.caughtUp(ctx, res.Sequence); err != nil {
		return nil, err
	}
	tu, err = a.turn(ctx, c, turnID)
	if err != nil {
		return nil, err
	}
	return &controlv1.ClaimTurnResponse{Turn: tu, RunId: runID, LeaseExpiresAt: timestamppb.New(expires), Sequence: res.Sequence}, nil
}

// HeartbeatTurn renews a claim's lease and tells the worker what became of
// its turn: interrupt requested, or ended without it (a busy-policy
// interrupt ends a running turn at once). A lease that is gone (expired,
// or never this run's) is FailedPrecondition LEASE_LOST: the worker must
// stop, the turn is or will be failed as lost.
func (cl *Claims) HeartbeatTurn(ctx context.Context, c Caller, req *controlv1.HeartbeatTurnRequest) (*controlv1.HeartbeatTurnResponse, error) {
	tu, err := cl.App.turn(ctx, c, req.GetTurnId())
	if err != nil {
		return nil, err
	}
	ttl := req.GetLeaseTtl().AsDuration()
	if ttl <= 0 {
		ttl = DefaultTurnLease
	}
	ok, err := cl.Leases.Renew(ctx, TurnLeaseKey(c.Tenant, tu.TurnId), req.GetRunId(), ttl)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &domain.Error{Kind: domain.FailedPrecondition, Reason: "LEASE_LOST", Resource: "turn/" + tu.TurnId,
			Message:  fmt.Sprintf("run %s holds no lease on turn %s (expired or never granted); stop working on it", req.GetRunId(), tu.TurnId),
			Metadata: map[string]string{"status": tu.Status, "run_id": req.GetRunId()}}
	}
	return &controlv1.HeartbeatTurnResponse{
		LeaseExpiresAt: timestamppb.New(cl.now().Add(ttl)), Status: tu.Status,
		InterruptRequested: tu.Status == "interrupting",
	}, nil
}

// RunSweeper ends leased turns whose lease expired, every interval, until
// ctx ends.
func (cl *Claims) RunSweeper(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if _, err := cl.SweepOnce(ctx); err != nil && ctx.Err() == nil {
			cl.Logger.WarnContext(ctx, "sweeping turn leases", "error", err)
		}
	}
}

// SweepOnce fails every running turn started by a claim whose lease is no
// longer held by that claim, with category "lost", and returns how many
// it ended. Several replicas may sweep at once: the failure is decided at
// the thread's expected sequence (the second finds the turn ended) and
// carries an event id derived from the run, so it is written once.
func (cl *Claims) SweepOnce(ctx context.Context) (int, error) {
	a := cl.App
	entries, err := a.Store.Range(ctx, rm.LeasedIndex, projection.RangeQuery{})
	if err != nil {
		return 0, err
	}
	var errs []error
	ended := 0
	for _, e := range entries {
		tenant, turnID, ok := strings.Cut(e.Member, "|")
		if !ok {
			continue
		}
		raw, err := a.Store.Get(ctx, rm.ClaimRunKey(tenant, turnID))
		if errors.Is(err, projection.ErrNotFound) {
			continue // ended since the range was read
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		runID := string(raw)
		holder, held, err := cl.Leases.Holder(ctx, TurnLeaseKey(tenant, turnID))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if held && holder == runID {
			continue
		}
		n, err := cl.loseTurn(ctx, tenant, turnID, runID)
		ended += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return ended, errors.Join(errs...)
}

func (cl *Claims) loseTurn(ctx context.Context, tenant, turnID, runID string) (int, error) {
	a := cl.App
	c := Caller{Tenant: tenant, Subject: "runtime"}
	tu, ok, err := rm.Turn(ctx, a.Store, tenant, turnID)
	if err != nil || !ok || domain.Terminal(tu.Status) {
		return 0, err
	}
	res, err := a.exec.Execute(ctx, threadAgg(tenant, tu.SessionId, tu.ThreadId), func(ctx context.Context, _ uint64) ([]*eventsv1.RuntimeEvent, error) {
		th, err := a.thread(ctx, c, tu.SessionId, tu.ThreadId)
		if err != nil {
			return nil, err
		}
		cur, err := a.turn(ctx, c, turnID)
		if err != nil {
			return nil, err
		}
		if domain.Terminal(cur.Status) {
			return nil, nil // the worker (or another sweeper) ended it first
		}
		failed := &eventsv1.RuntimeEvent{
			Type: "turn.failed", EventId: derivedEventID("turn-lost", tenant, turnID, runID), Timestamp: timestamppb.New(a.now()),
			TenantId: tenant, SessionId: tu.SessionId, ThreadId: tu.ThreadId, TurnId: turnID, RunId: runID,
			Payload: &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: &eventsv1.TurnFailed{
				Outcome: eventsv1.TurnOutcome_TURN_OUTCOME_FAILED, Category: "lost", Retryable: true,
				Message: fmt.Sprintf("the worker's lease on turn %s (run %s) expired: the worker stopped heartbeating", turnID, runID),
			}},
		}
		return domain.DecideReport(th, cur, []*eventsv1.RuntimeEvent{failed})
	})
	if _, refused := IsDomain(err); refused {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(res.Appended) > 0 {
		return 1, nil
	}
	return 0, nil
}

// derivedEventID is a deterministic event id: the same fact decided twice
// (two replicas) dedups in the log.
func derivedEventID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return ids.Event + "_" + hex.EncodeToString(h.Sum(nil))[:40]
}

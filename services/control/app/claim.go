package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/held"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/quota"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

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
	Leases lease.Store
	// Held is the store of what workers hold, shared with the other
	// services (held.go); nil: holds live in Leases.
	Held   *held.Store
	Logger *slog.Logger
	// MaxAttempts is the attempt budget of a turn whose options do not set
	// one (domain.MaxAttemptsOption).
	MaxAttempts int
	// MaxNap bounds one wait of a claim poll (0: maxClaimNap). A poll
	// wakes when the claims projection moves; the nap is the fallback
	// for a turn the thread read model did not show yet.
	MaxNap time.Duration
	now    func() time.Time
	// granted are the turn leases this process took or renewed (grants).
	granted grants
}

// NewClaims builds the claim use cases on the app and a lease store.
func NewClaims(a *App, leases lease.Store, logger *slog.Logger) *Claims {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Claims{App: a, Leases: leases, Logger: logger, MaxAttempts: domain.DefaultMaxAttempts, now: time.Now}
}

// TurnLeaseKey is the lease key of a turn.
func TurnLeaseKey(tenant, turn string) string { return tenant + ":" + turn }

// ClaimTurn waits up to req.wait for an accepted, not yet started turn of
// the caller's tenant (optionally of one session), takes its lease and
// starts it: turn.started carries the worker id and the claim's run id.
// Concurrent claimers (on any replica) never start the same turn: the
// lease admits one holder, and turn.started is appended at the thread's
// expected sequence and only for an accepted turn. The answer's sequence
// is turn.started's, 0 when nothing was claimed.
func (cl *Claims) ClaimTurn(ctx context.Context, c Caller, req *controlv1.ClaimTurnRequest) (*controlv1.ClaimTurnResponse, error) {
	ttl := req.GetLeaseTtl().AsDuration()
	if ttl <= 0 {
		ttl = DefaultTurnLease
	}
	deadline := cl.now().Add(req.GetWait().AsDuration())
	// Where a claimable turn can appear: the session's partition of the
	// log, or any partition.
	views := cl.App.Log.Views()
	if s := req.GetSessionId(); s != "" {
		views = []*eventlog.Log{cl.App.Log.Of(c.Tenant, s)}
	}
	seen := make([]uint64, len(views))
	for {
		for i, v := range views {
			var err error
			if seen[i], err = projector.Checkpoint(ctx, v, cl.App.Store, readmodel.ClaimsName); err != nil {
				return nil, err
			}
			// A claimable turn is read from the thread read model, which
			// may trail the claims projection by a moment: wait for it
			// (in the same partition: positions of two do not compare)
			// rather than skip the turn and nap (commands no longer wait
			// for projections, so a worker polls right behind the submit).
			if _, err := projector.WaitFor(ctx, v, cl.App.Store, readmodel.Name, seen[i], ReadTimeout); err != nil {
				return nil, err
			}
		}
		resp, err := cl.tryClaim(ctx, c, req, ttl)
		if err != nil || resp != nil {
			return resp, err
		}
		left := deadline.Sub(cl.now())
		if left <= 0 {
			return &controlv1.ClaimTurnResponse{}, nil
		}
		wctx, cancel := context.WithTimeout(ctx, min(left, cl.nap()))
		err = cl.claimsMoved(wctx, views, seen)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
}

// claimsMoved waits until the claims projection has applied something
// after seen[i] in any of views (the first to move ends the wait), or
// until ctx ends.
func (cl *Claims) claimsMoved(ctx context.Context, views []*eventlog.Log, seen []uint64) error {
	wait := func(ctx context.Context, i int) error {
		_, err := cl.App.Store.WaitFor(ctx, checkpointName(views[i], readmodel.ClaimsName), seen[i]+1)
		return err
	}
	if len(views) == 1 {
		return wait(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first := make(chan error, len(views))
	var wg sync.WaitGroup
	for i := range views {
		wg.Go(func() { first <- wait(ctx, i) })
	}
	err := <-first
	cancel()
	wg.Wait()
	return err
}

// nap is the longest one wait of a claim poll lasts (MaxNap).
func (cl *Claims) nap() time.Duration {
	if cl.MaxNap > 0 {
		return cl.MaxNap
	}
	return maxClaimNap
}

// tryClaim walks the claimable turns in claim order and claims the first
// it can: for one session, its index (priority, then arrival); otherwise
// the tenant's fair queues, most urgent priority first, each in fair-share
// order (readmodel.TurnQueue).
func (cl *Claims) tryClaim(ctx context.Context, c Caller, req *controlv1.ClaimTurnRequest, ttl time.Duration) (*controlv1.ClaimTurnResponse, error) {
	if s := req.GetSessionId(); s != "" {
		return cl.claimFrom(ctx, c, req, readmodel.ClaimableSessionIndex(c.Tenant, s), ttl)
	}
	prios, err := readmodel.TurnQueue.Priorities(ctx, cl.App.Store, c.Tenant)
	if err != nil {
		return nil, err
	}
	for _, p := range prios {
		resp, err := cl.claimFrom(ctx, c, req, readmodel.TurnQueue.Index(c.Tenant, p), ttl)
		if err != nil || resp != nil {
			return resp, err
		}
	}
	return nil, nil
}

// claimFrom claims the first turn of index it can, in the index's order.
func (cl *Claims) claimFrom(ctx context.Context, c Caller, req *controlv1.ClaimTurnRequest, index string, ttl time.Duration) (*controlv1.ClaimTurnResponse, error) {
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
	tu, ok, err := readmodel.Turn(ctx, a.Store, c.Tenant, turnID)
	if err != nil || !ok || domain.Terminal(tu.Status) {
		return nil, err // the thread read model may trail; a later poll sees it
	}
	var at *controlv1.TurnAttempts
	if tu.Status != domain.TurnAccepted {
		if at, err = readmodel.Attempts(ctx, a.Store, c.Tenant, turnID); err != nil || !(at.GetRetryPending() || at.GetResumePending()) {
			return nil, err
		}
	}
	runID, token := ids.New(ids.Run), auth.NewLeaseToken()
	key := TurnLeaseKey(c.Tenant, turnID)
	asked := cl.now()
	got, err := cl.Leases.Acquire(ctx, key, auth.LeaseHolder(runID, token), ttl)
	if err != nil || !got {
		return nil, err // another worker is starting it
	}
	cl.granted.put(key, auth.LeaseHolder(runID, token), asked, asked.Add(ttl))
	expires := cl.now().Add(ttl)
	var decided []*eventsv1.RuntimeEvent
	res, err := a.w.Execute(ctx, threadAgg(c.Tenant, tu.SessionId, tu.ThreadId), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		th, cur, at, err := claimState(ctx, st, c, tu)
		if err != nil {
			return nil, err
		}
		evs, err := domain.DecideClaim(th, cur, at, domain.Claim{RunID: runID, WorkerID: worker})
		decided = evs
		stamp(evs, c.Tenant, a.now(), func(int) string { return ids.New(ids.Event) })
		return evs, err
	})
	if err != nil || len(res.Appended) == 0 {
		// Nothing was written: the lease guards nothing. A refusal means
		// the turn changed under us (interrupted, started): move on.
		cl.granted.drop(key)
		_ = cl.Leases.Release(context.WithoutCancel(ctx), key, auth.LeaseHolder(runID, token))
		if fault.Refused(err) {
			return nil, nil
		}
		return nil, err
	}
	tu, err = turnIn(ctx, res.State, c, turnID)
	if err != nil {
		return nil, err
	}
	resume := resumeOf(decided)
	// The claimer reads the turn's session while it holds the lease
	// (held.go). Failing here loses the claim as any error after the
	// append does: its lease lapses and the run is recorded lost.
	if err := cl.HoldSession(ctx, c, tu.SessionId, ttl); err != nil {
		return nil, err
	}
	return &controlv1.ClaimTurnResponse{Turn: tu, RunId: runID, LeaseToken: token, LeaseExpiresAt: timestamppb.New(expires), Sequence: res.Sequence,
		CheckpointUri: resume.uri, CheckpointSequence: resume.seq}, nil
}

// resumption is where a resumed turn continues: the checkpoint its last
// run parked with and the position of that park.
type resumption struct {
	uri string
	seq uint64
}

// resumeOf reads the claim's run.status "resumed", if it wrote one.
func resumeOf(appended []*eventsv1.RuntimeEvent) resumption {
	for _, ev := range appended {
		if p := ev.GetRunStatus(); (p.GetPhase() == domain.PhaseResumed || p.GetPhase() == domain.PhaseRetrying) && len(p.GetCheckpoints()) == 1 {
			seq, _ := strconv.ParseUint(p.GetMetadata()["checkpoint_sequence"], 10, 64)
			return resumption{uri: p.GetCheckpoints()[0], seq: seq}
		}
	}
	return resumption{}
}

// claimState loads what claim and loss decisions read, from the thread's
// state as the writer holds it: the thread, the turn and the turn's
// attempts (the claims fold runs on the same state).
func claimState(ctx context.Context, st command.State, c Caller, tu *controlv1.Turn) (*controlv1.ThreadRead, *controlv1.Turn, *controlv1.TurnAttempts, error) {
	th, err := threadIn(ctx, st, c, tu.SessionId, tu.ThreadId)
	if err != nil {
		return nil, nil, nil, err
	}
	cur, err := turnIn(ctx, st, c, tu.TurnId)
	if err != nil {
		return nil, nil, nil, err
	}
	at, err := readmodel.Attempts(ctx, st, c.Tenant, tu.TurnId)
	if err != nil {
		return nil, nil, nil, err
	}
	return th, cur, at, nil
}

// stamp fills what the domain leaves to the app: tenant, time and ids.
func stamp(evs []*eventsv1.RuntimeEvent, tenant string, now time.Time, id func(i int) string) {
	for i, ev := range evs {
		ev.TenantId, ev.Timestamp, ev.EventId = tenant, timestamppb.New(now), id(i)
	}
}

// GetTurnAttempts answers a turn's attempts (one per claimed run). Another
// tenant's turn is NotFound.
func (cl *Claims) GetTurnAttempts(ctx context.Context, c Caller, req *controlv1.GetTurnAttemptsRequest) (*controlv1.GetTurnAttemptsResponse, error) {
	a := cl.App
	seq, err := projector.WaitFor(ctx, a.Log, a.Store, readmodel.ClaimsName, req.GetMinSequence(), ReadTimeout)
	if err != nil {
		return nil, err
	}
	if _, err := a.caughtUp(ctx, req.GetMinSequence()); err != nil {
		return nil, err
	}
	tu, err := a.turn(ctx, c, req.GetTurnId())
	if err != nil {
		return nil, err
	}
	if err := cl.CheckHeld(ctx, c, tu.SessionId); err != nil {
		return nil, err
	}
	at, err := readmodel.Attempts(ctx, a.Store, c.Tenant, tu.TurnId)
	if err != nil {
		return nil, err
	}
	if at == nil {
		at = &controlv1.TurnAttempts{TurnId: tu.TurnId, SessionId: tu.SessionId, ThreadId: tu.ThreadId}
	}
	if a.Log.Partitions() > 1 {
		// How far the turn's session is applied (caughtUpIn).
		if seq, err = projector.Checkpoint(ctx, a.Log.Of(c.Tenant, tu.SessionId), a.Store, readmodel.ClaimsName); err != nil {
			return nil, err
		}
	}
	return &controlv1.GetTurnAttemptsResponse{Attempts: at, Sequence: seq}, nil
}

// HeartbeatTurn renews a claim's lease and tells the worker what became of
// its turn: interrupt requested, or ended without it (a busy-policy
// interrupt ends a running turn at once). A lease that is gone (expired,
// or never this run's) is FailedPrecondition LEASE_LOST: the worker must
// stop: its run is or will be recorded lost.
func (cl *Claims) HeartbeatTurn(ctx context.Context, c Caller, req *controlv1.HeartbeatTurnRequest) (*controlv1.HeartbeatTurnResponse, error) {
	tu, err := cl.App.turn(ctx, c, req.GetTurnId())
	if err != nil {
		return nil, err
	}
	// Answer from everything the thread has recorded: an interrupt
	// appended a moment ago (on any replica) must not be missed by a worker
	// that asks right after seeing its consequences in the stream.
	st, err := cl.App.w.Refresh(ctx, threadAgg(c.Tenant, tu.SessionId, tu.ThreadId))
	if err != nil {
		return nil, err
	}
	if tu, err = turnIn(ctx, st, c, req.GetTurnId()); err != nil {
		return nil, err
	}
	ttl := req.GetLeaseTtl().AsDuration()
	if ttl <= 0 {
		ttl = DefaultTurnLease
	}
	key, holder, asked := TurnLeaseKey(c.Tenant, tu.TurnId), auth.LeaseHolder(req.GetRunId(), req.GetLeaseToken()), cl.now()
	ok, err := cl.Leases.Renew(ctx, key, holder, ttl)
	if err != nil {
		return nil, err
	}
	if !ok || req.GetLeaseToken() == "" {
		return nil, domain.LeaseLost(tu, req.GetRunId(), "")
	}
	cl.granted.put(key, holder, asked, asked.Add(ttl))
	if err := cl.HoldSession(ctx, c, tu.SessionId, ttl); err != nil {
		return nil, err
	}
	return &controlv1.HeartbeatTurnResponse{
		LeaseExpiresAt: timestamppb.New(cl.now().Add(ttl)), Status: tu.Status,
		InterruptRequested: tu.Status == domain.TurnInterrupting,
	}, nil
}

// ReportEvents records a worker's facts for a turn (App.ReportEvents),
// fenced to the turn's current run when a claim started it: the request
// must carry that run's id and lease token, the run must not be lost, and
// its lease must still be held by that pair. Anything else is
// FailedPrecondition LEASE_LOST and nothing is recorded. Turns no claim
// started (a host that reports turn.started itself) are not fenced.
//
// The run is the request's run_id or, when that is empty, the run_id the
// reported events share (a worker stamps its facts with it).
func (cl *Claims) ReportEvents(ctx context.Context, c Caller, req *controlv1.ReportEventsRequest) (*controlv1.ReportEventsResponse, error) {
	if parks(req.GetEvents()) {
		if err := cl.checkParkedCap(ctx, c.Tenant); err != nil {
			return nil, err
		}
	}
	runID := req.GetRunId()
	if runID == "" {
		runID = sharedRunID(req.GetEvents())
	}
	resp, err := cl.App.ReportEvents(ctx, c, req, func(ctx context.Context, st command.State, tu *controlv1.Turn) error {
		// The turn's attempts are folded into the thread's state (claims).
		at, err := readmodel.Attempts(ctx, st, c.Tenant, tu.TurnId)
		if err != nil {
			return err
		}
		if err := domain.CheckReportingRun(tu, at, runID); err != nil || len(at.GetAttempts()) == 0 {
			return err
		}
		key := TurnLeaseKey(c.Tenant, tu.TurnId)
		if cl.granted.holds(key, auth.LeaseHolder(runID, req.GetLeaseToken()), cl.now()) {
			return nil // granted here, and not yet past its end
		}
		holder, held, err := cl.Leases.Holder(ctx, key)
		if err != nil {
			return err
		}
		if !held || !auth.HoldsLease(holder, runID, req.GetLeaseToken()) {
			return domain.LeaseLost(tu, runID, "")
		}
		return nil
	})
	if err == nil && parks(req.GetEvents()) {
		// The run handed the turn back: its lease guards nothing now, and
		// the worker that resumes it must be able to take it at once.
		key := TurnLeaseKey(c.Tenant, req.GetEvents()[0].GetTurnId())
		cl.granted.drop(key)
		_ = cl.Leases.Release(ctx, key, auth.LeaseHolder(runID, req.GetLeaseToken()))
	}
	return resp, err
}

// parkedRetry is when a park refused for the tenant's cap may be tried
// again: parked turns leave when their answers come.
const parkedRetry = 5 * time.Second

// checkParkedCap refuses a park beyond the tenant's parked-turn cap
// (quota.Limits.ParkedTurns): ResourceExhausted PARKED_TURNS_PER_TENANT.
// A worker refused keeps its turn and waits in place. The count is the
// claims read model's, so parks it has not folded yet are not in it: a
// burst may pass the cap by those.
func (cl *Claims) checkParkedCap(ctx context.Context, tenant string) error {
	lim, ok := quota.LimitsAt(ctx, tenant)
	if !ok || lim.ParkedTurns <= 0 {
		return nil
	}
	n, err := cl.App.Store.Count(ctx, readmodel.ParkedIndex(tenant))
	if err != nil {
		return err
	}
	if n < int64(lim.ParkedTurns) {
		return nil
	}
	max := strconv.Itoa(lim.ParkedTurns)
	return fault.Exhausted(quota.ReasonParkedTurns,
		fmt.Sprintf("tenant %s has %d turns parked, its limit (max_parked_turns %s): the turn waits in place; retry after %s", tenant, n, max, parkedRetry),
		parkedRetry, map[string]string{"limit": "max_parked_turns", "max": max, "tenant": tenant})
}

// parks says whether a report hands its turn back (run.status "parked").
func parks(evs []*eventsv1.RuntimeEvent) bool {
	for _, ev := range evs {
		if ev.GetRunStatus().GetPhase() == domain.PhaseParked {
			return true
		}
	}
	return false
}

// sharedRunID is the run_id every event carries, or "" when they differ
// or one has none.
func sharedRunID(evs []*eventsv1.RuntimeEvent) string {
	run := ""
	for i, ev := range evs {
		if i == 0 {
			run = ev.GetRunId()
		} else if ev.GetRunId() != run {
			return ""
		}
	}
	return run
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

// SweepOnce decides on every running turn started by a claim whose lease
// is no longer held by that claim: the run is lost, and the turn is
// claimable again, failed "lost" (attempts spent) or cancelled (an
// interrupt was pending). It returns how many runs it found lost. Several
// replicas may sweep at once: the loss is decided at the thread's expected
// sequence (the second finds the run already lost) and its events carry
// ids derived from the run, so it is written once.
func (cl *Claims) SweepOnce(ctx context.Context) (int, error) {
	a := cl.App
	entries, err := a.Store.Range(ctx, readmodel.LeasedIndex, projection.RangeQuery{})
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
		raw, err := a.Store.Get(ctx, readmodel.ClaimRunKey(tenant, turnID))
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
		if held && auth.LeaseRun(holder) == runID {
			continue
		}
		n, err := cl.loseRun(ctx, tenant, turnID, runID)
		ended += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return ended, errors.Join(errs...)
}

func (cl *Claims) loseRun(ctx context.Context, tenant, turnID, runID string) (int, error) {
	a := cl.App
	c := Caller{Tenant: tenant, Subject: "runtime"}
	tu, ok, err := readmodel.Turn(ctx, a.Store, tenant, turnID)
	if err != nil || !ok || domain.Terminal(tu.Status) {
		return 0, err
	}
	res, err := a.w.Execute(ctx, threadAgg(tenant, tu.SessionId, tu.ThreadId), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		th, cur, at, err := claimState(ctx, st, c, tu)
		if err != nil {
			return nil, err
		}
		budget, source := domain.MaxAttempts(cur, cl.MaxAttempts)
		evs, err := domain.DecideLoss(th, cur, at, domain.Loss{RunID: runID, MaxAttempts: budget, Source: source})
		stamp(evs, tenant, a.now(), func(i int) string { return derivedEventID("run-lost", tenant, turnID, runID, strconv.Itoa(i)) })
		return evs, err
	})
	if fault.Refused(err) {
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

// grants are the turn leases this process took (a claim) or renewed (a
// heartbeat), each with an end no later than the lease's own in the store:
// the end is counted from before the store was asked, and until the
// lease lapses no one else can take it. A report of the holder before
// that end is fenced without asking the store (one round trip fewer per
// ReportEvents in the serve shape); anything else (a lease another
// replica granted, a grant past its end) asks the store as before. A
// release through this process forgets the grant. What it cannot see is a
// release through another replica of a lease granted here; that is the
// handing-back run's own, whose attempt the thread's state already
// records parked.
type grants struct {
	mu sync.Mutex
	m  map[string]grant
	// puts counts since the last sweep of lapsed grants.
	puts int
}

type grant struct {
	holder string
	until  time.Time
}

// maxGrantPuts: lapsed grants are swept every this many puts.
const maxGrantPuts = 1024

func (g *grants) put(key, holder string, now, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]grant{}
	}
	if g.puts++; g.puts >= maxGrantPuts {
		g.puts = 0
		for k, v := range g.m {
			if !now.Before(v.until) {
				delete(g.m, k)
			}
		}
	}
	g.m[key] = grant{holder: holder, until: until}
}

func (g *grants) drop(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, key)
}

// holds says whether holder holds key at now by a grant of this process.
func (g *grants) holds(key, holder string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.m[key]
	return ok && v.holder == holder && now.Before(v.until)
}

package readmodel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fairshare"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// ClaimsName is the checkpoint of the claims projection: which turns a
// worker may claim, and which running turns are held under a lease. It is
// its own projection (not part of the thread read model) so that a claim
// poll can wait on it moving and a sweep can list leased turns without
// scanning every thread.
const ClaimsName = "control.claims"

// ClaimsFoldVersion is the claims projection's fold version (projection.Fold):
// bump it with any change to what it stores or how it folds an event; a
// process of a new fold version rebuilds the read models beside the old
// ones (docs/upgrading.md). 2: the fair queues (pkg/fairshare) replace the
// tenant's claimable index. 3: parked runs wait for subagents too
// (DueSubagentsIndex, ended_subagent_ids).
const ClaimsFoldVersion = 3

// TurnQueue orders a tenant's claimable turns: priority, then weighted
// fair share across fairness keys, then arrival (pkg/fairshare). Its
// index per (tenant, priority), TurnQueue.Index, is what a claim of any
// session reads.
var TurnQueue = fairshare.Queue{Name: "turns"}

// ClaimableSessionIndex lists one session's claimable turns by priority,
// then the time (unix milliseconds) of the fact that made them claimable:
// what a claim for that session reads (SessionClaimScore). Not by
// sequence: positions of different partitions of the log do not compare.
func ClaimableSessionIndex(tenant, session string) string {
	return "sclaimable:" + tenant + ":" + session
}

// SessionClaimScore scores a turn in ClaimableSessionIndex: priority
// major, time minor. Exact in a float64 while times in milliseconds stay
// below 10^13 (the year 2286).
func SessionClaimScore(priority uint32, ev *eventsv1.RuntimeEvent) float64 {
	return float64(priority)*1e13 + Millis(ev)
}

// TurnClass is how a turn.submitted asks its turn to be claimed, defaults
// applied (a fact recorded before the fields existed reads priority 3, the
// session's key, weight 1).
func TurnClass(ev *eventsv1.RuntimeEvent) fairshare.Class {
	p := ev.GetTurnSubmitted()
	return fairshare.Resolve(p.GetPriority(), p.GetFairnessKey(), p.GetFairnessWeight(), ev.GetSessionId())
}

// LeasedIndex lists every running turn started by a claim, across tenants;
// members are "<tenant>|<turn_id>" (the sweeper's work list).
const LeasedIndex = "claims:leased"

// ParkedIndex holds a tenant's parked turns (by the position of their
// park): the count the parked-turn cap is checked against.
func ParkedIndex(tenant string) string { return "parked:" + tenant }

// ClaimRunKey holds the run id (the lease token) of a claimed turn.
func ClaimRunKey(tenant, turn string) string { return "claimrun:" + tenant + ":" + turn }

// LeasedMember is a LeasedIndex member.
func LeasedMember(tenant, turn string) string { return tenant + "|" + turn }

// DueSubagentsIndex lists the subagents parked runs wait for, by the
// unix milliseconds of their wait's deadline (0: their parent turn ended,
// so they are due at once); members are "<tenant>|<subagent_id>". Control's
// sweeper closes a due subagent and interrupts its turn; its end takes it
// out.
const DueSubagentsIndex = "subagents:due"

// DueSubagentMember is a DueSubagentsIndex member.
func DueSubagentMember(tenant, sub string) string { return tenant + "|" + sub }

// AttemptsKey holds a turn's attempts (controlv1.TurnAttempts): one per
// claim, and whether a lost run left it waiting for a new claim.
func AttemptsKey(tenant, turn string) string { return "attempts:" + tenant + ":" + turn }

// Attempts loads a turn's attempts; nil when no worker ever claimed it.
func Attempts(ctx context.Context, store projection.Store, tenant, turn string) (*controlv1.TurnAttempts, error) {
	raw, err := store.Get(ctx, AttemptsKey(tenant, turn))
	if errors.Is(err, projection.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	at := &controlv1.TurnAttempts{}
	if err := proto.Unmarshal(raw, at); err != nil {
		return nil, fmt.Errorf("attempts of turn %s: %w", turn, err)
	}
	return at, nil
}

// Claims is the claims projection on a log of Subjects.Partitions.
type Claims struct{ Subjects eventlog.Subjects }

// Name implements projector.Projection.
func (Claims) Name() string { return ClaimsName }

// FoldVersion is the projection's fold version (projection.Fold).
func (Claims) FoldVersion() int { return ClaimsFoldVersion }

// Filters implements projector.Projection.
func (Claims) Filters() []string { return nil }

// Project implements projector.Projection. It follows the turn lifecycle
// and its runs: a turn becomes claimable when it is admitted as the active
// turn, dequeued, or its run is lost with budget left (run.status "lost",
// next "retry", written by control's sweeper) or parked and resumable; it
// stops being claimable when a run starts or the turn ends. Every claimed
// run is an attempt. A claimable turn is in its tenant's fair queue
// (TurnQueue) under the class and tag its turn.submitted recorded.
func (cl Claims) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	ev := rec.Event
	tenant, session, seq := ev.GetTenantId(), ev.GetSessionId(), ev.GetSequence()
	b := projection.Batch{Projection: ClaimsName, Sequence: seq}
	// The partition folding the event: the fair queue's documents of
	// virtual time and finish tags are each one partition's.
	k := cl.Subjects.PartitionOf(tenant, session)
	// claimable queues the turn under the class and tag its submit
	// recorded.
	claimable := func(turn string) error {
		// A turn submitted before classes were recorded: the defaults.
		c, err := TurnQueue.Enqueue(ctx, store, &b, tenant, turn, fairshare.Resolve(0, "", 0, session))
		if err != nil {
			return err
		}
		b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: ClaimableSessionIndex(tenant, session), Member: turn, Score: SessionClaimScore(c.Priority, ev)})
		return nil
	}
	// notClaimable takes the turn out of the queues; started says a run
	// took it (which moves the fair queue's virtual time).
	notClaimable := func(turn string, started bool) error {
		b.IndexRemoves = append(b.IndexRemoves, projection.IndexEntry{Index: ClaimableSessionIndex(tenant, session), Member: turn})
		return TurnQueue.Dequeue(ctx, store, &b, tenant, turn, started, k)
	}
	notLeased := func(turn string) {
		b.IndexRemoves = append(b.IndexRemoves, projection.IndexEntry{Index: LeasedIndex, Member: LeasedMember(tenant, turn)})
		b.Deletes = append(b.Deletes, ClaimRunKey(tenant, turn))
	}
	// attempts loads the turn's attempts for an update; put stores them.
	attempts := func() (*controlv1.TurnAttempts, error) {
		return Attempts(ctx, store, tenant, ev.GetTurnId())
	}
	put := func(at *controlv1.TurnAttempts) error {
		raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(at)
		if err != nil {
			return err
		}
		b.Puts = append(b.Puts, projection.KV{Key: AttemptsKey(tenant, ev.GetTurnId()), Value: raw})
		return nil
	}
	switch ev.GetType() {
	case events.TypeTurnSubmitted:
		p := ev.GetTurnSubmitted()
		if a := p.GetAdmission(); a != "accepted" && a != "queued" {
			break // steered into the active turn: never claimed itself
		}
		c, accepted := TurnClass(ev), p.GetAdmission() == "accepted"
		if accepted {
			b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: ClaimableSessionIndex(tenant, session), Member: ev.GetTurnId(), Score: SessionClaimScore(c.Priority, ev)})
		}
		if err := TurnQueue.Record(ctx, store, &b, tenant, ev.GetTurnId(), c, p.GetFairTag(), k, accepted, false); err != nil {
			return b, err
		}
	case events.TypeQueueChanged:
		if p := ev.GetQueueChanged(); p.GetChange() == "dequeued" && p.GetTurnId() != "" {
			if err := claimable(p.GetTurnId()); err != nil {
				return b, err
			}
		}
	case events.TypeTurnStarted:
		if err := notClaimable(ev.GetTurnId(), true); err != nil {
			return b, err
		}
		if ev.GetRunId() == "" {
			break // started by a plain report: no claim, no lease, no attempt
		}
		// A run resumes it: it is no longer parked.
		b.IndexRemoves = append(b.IndexRemoves, projection.IndexEntry{Index: ParkedIndex(tenant), Member: ev.GetTurnId()})
		b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: LeasedIndex, Member: LeasedMember(tenant, ev.GetTurnId()), Score: float64(seq)})
		b.Puts = append(b.Puts, projection.KV{Key: ClaimRunKey(tenant, ev.GetTurnId()), Value: []byte(ev.GetRunId())})
		at, err := attempts()
		if err != nil {
			return b, err
		}
		if at == nil {
			at = &controlv1.TurnAttempts{TurnId: ev.GetTurnId(), SessionId: session, ThreadId: ev.GetThreadId()}
		}
		at.RetryPending, at.ResumePending = false, false
		at.Attempts = append(at.Attempts, &controlv1.TurnAttempt{
			Attempt: int32(len(at.Attempts) + 1), RunId: ev.GetRunId(), WorkerId: ev.GetTurnStarted().GetWorkerId(),
			Status: domain.AttemptRunning, StartedAt: ev.GetTimestamp(), StartedSequence: seq,
		})
		if err := put(at); err != nil {
			return b, err
		}
	case events.TypeActionResolved:
		at, err := attempts()
		if err != nil || at == nil {
			return b, err // no claimed run waits on it
		}
		if at.ResolvedActionIds = append(at.ResolvedActionIds, ev.GetActionId()); resumable(at) {
			at.ResumePending = true
			if err := claimable(ev.GetTurnId()); err != nil {
				return b, err
			}
		}
		if err := put(at); err != nil {
			return b, err
		}
	case events.TypeRunStatus:
		p := ev.GetRunStatus()
		if p.GetPhase() == domain.PhaseParked {
			at, err := attempts()
			if err != nil || at == nil {
				return b, err
			}
			last := lastAttempt(at)
			if last == nil || last.GetRunId() != ev.GetRunId() || last.GetStatus() != domain.AttemptRunning {
				break // not the current run (control fences reports, so only a replayed oddity)
			}
			last.Status, last.EndedAt, last.EndedSequence = domain.AttemptParked, ev.GetTimestamp(), seq
			last.OutcomeCategory, last.OutcomeMessage = "parked", p.GetDetail()
			last.WaitsFor = nil
			if p.GetMetadata()["reason"] == domain.ParkWait {
				for _, id := range strings.Split(p.GetMetadata()["action_ids"], ",") {
					if id != "" {
						last.WaitsFor = append(last.WaitsFor, id)
					}
				}
				// Control checked the waits' shape when it took the park.
				subs, _ := domain.ParkedSubagents(p.GetMetadata())
				for _, sw := range subs {
					last.WaitsFor = append(last.WaitsFor, sw.ID)
					if !slices.Contains(at.GetEndedSubagentIds(), sw.ID) {
						b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: DueSubagentsIndex, Member: DueSubagentMember(tenant, sw.ID), Score: float64(sw.Deadline)})
					}
				}
			}
			at.CheckpointUri, at.CheckpointSequence = p.GetCheckpoints()[0], seq
			notLeased(ev.GetTurnId())
			b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: ParkedIndex(tenant), Member: ev.GetTurnId(), Score: float64(seq)})
			if resumable(at) {
				at.ResumePending = true
				if err := claimable(ev.GetTurnId()); err != nil {
					return b, err
				}
			}
			if err := put(at); err != nil {
				return b, err
			}
			break
		}
		next := p.GetMetadata()["next"]
		if p.GetPhase() != domain.PhaseLost || next == "" {
			break
		}
		at, err := attempts()
		if err != nil {
			return b, err
		}
		last := lastAttempt(at)
		if last == nil || last.GetRunId() != ev.GetRunId() || last.GetStatus() != domain.AttemptRunning {
			break // not the current run (control decides losses on this state, so this is only a replayed oddity)
		}
		last.Status, last.EndedAt, last.EndedSequence = domain.AttemptLost, ev.GetTimestamp(), seq
		last.OutcomeCategory, last.OutcomeMessage = "lost", p.GetDetail()
		if n, err := strconv.Atoi(p.GetMetadata()["max_attempts"]); err == nil {
			at.MaxAttempts = int32(n)
		}
		notLeased(ev.GetTurnId())
		if next == domain.NextRetry {
			at.RetryPending = true
			if err := claimable(ev.GetTurnId()); err != nil {
				return b, err
			}
		}
		if err := put(at); err != nil {
			return b, err
		}
	case events.TypeSubagentCompleted, events.TypeSubagentFailed, events.TypeSubagentClosed, events.TypeSubagentStatus:
		// A subagent's end, as its parent's thread records it (so the
		// parent's own state has it when a claim decides): subagent.closed,
		// or the subagent.status "completed"/"failed" control's reactor
		// appends there for the child's end. The fact names the parent's
		// turn.
		sub := ev.GetSubagentId()
		if ev.GetType() != events.TypeSubagentStatus || domain.SubagentEndedForParent(ev) {
			b.IndexRemoves = append(b.IndexRemoves, projection.IndexEntry{Index: DueSubagentsIndex, Member: DueSubagentMember(tenant, sub)})
		}
		if !domain.SubagentEndedForParent(ev) {
			break
		}
		at, err := attempts()
		if err != nil || at == nil || slices.Contains(at.GetEndedSubagentIds(), sub) {
			return b, err
		}
		at.EndedSubagentIds = append(at.EndedSubagentIds, sub)
		if resumable(at) {
			at.ResumePending = true
			if err := claimable(ev.GetTurnId()); err != nil {
				return b, err
			}
		}
		if err := put(at); err != nil {
			return b, err
		}
	case events.TypeTurnCompleted, events.TypeTurnFailed:
		b.IndexRemoves = append(b.IndexRemoves, projection.IndexEntry{Index: ClaimableSessionIndex(tenant, session), Member: ev.GetTurnId()},
			projection.IndexEntry{Index: ParkedIndex(tenant), Member: ev.GetTurnId()})
		if err := TurnQueue.Forget(ctx, store, &b, tenant, ev.GetTurnId()); err != nil {
			return b, err
		}
		notLeased(ev.GetTurnId())
		at, err := attempts()
		if err != nil || at == nil {
			return b, err
		}
		at.RetryPending, at.ResumePending = false, false
		if last := lastAttempt(at); last != nil && last.GetStatus() == domain.AttemptParked {
			// Ended while parked: the subagents it waited for are due at
			// once (nothing keeps running for a parent that stopped).
			for _, id := range last.GetWaitsFor() {
				if strings.HasPrefix(id, ids.Subagent+"_") && !slices.Contains(at.GetEndedSubagentIds(), id) {
					b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: DueSubagentsIndex, Member: DueSubagentMember(tenant, id), Score: 0})
				}
			}
		}
		if last := lastAttempt(at); last != nil && last.GetStatus() == domain.AttemptRunning {
			last.Status, last.EndedAt, last.EndedSequence = endStatus(ev), ev.GetTimestamp(), seq
			if ev.GetType() == events.TypeTurnCompleted {
				last.OutcomeCategory, last.OutcomeMessage = ev.GetTurnCompleted().GetStopReason(), ev.GetTurnCompleted().GetSummary()
			} else {
				last.OutcomeCategory, last.OutcomeMessage = ev.GetTurnFailed().GetCategory(), ev.GetTurnFailed().GetMessage()
			}
		}
		if err := put(at); err != nil {
			return b, err
		}
	}
	return b, nil
}

// resumable says whether a turn's last run parked and every action it
// waits for was resolved and every subagent it waits for ended (and it is
// not already waiting for a claim). Not "none pending": the park can be
// recorded before the action it names is opened (control opens a
// permission action when it sees the request).
func resumable(at *controlv1.TurnAttempts) bool {
	last := lastAttempt(at)
	if at.GetResumePending() || last == nil || last.GetStatus() != domain.AttemptParked {
		return false
	}
	for _, id := range last.GetWaitsFor() {
		if !slices.Contains(at.GetResolvedActionIds(), id) && !slices.Contains(at.GetEndedSubagentIds(), id) {
			return false
		}
	}
	return true
}

func lastAttempt(at *controlv1.TurnAttempts) *controlv1.TurnAttempt {
	if n := len(at.GetAttempts()); n > 0 {
		return at.GetAttempts()[n-1]
	}
	return nil
}

// endStatus is the status a turn's end gives its running attempt.
func endStatus(ev *eventsv1.RuntimeEvent) controlv1.TurnAttemptStatus {
	if ev.GetType() == events.TypeTurnCompleted {
		return domain.AttemptCompleted
	}
	switch ev.GetTurnFailed().GetOutcome() {
	case eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED:
		return domain.AttemptCancelled
	case eventsv1.TurnOutcome_TURN_OUTCOME_TIMED_OUT:
		return domain.AttemptTimedOut
	}
	return domain.AttemptFailed
}

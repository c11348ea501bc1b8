package projector

import (
	"context"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

// ClaimsName is the checkpoint of the claims projection: which turns a
// worker may claim, and which running turns are held under a lease. It is
// its own projection (not part of the thread read model) so that a claim
// poll can wait on it moving and a sweep can list leased turns without
// scanning every thread.
const ClaimsName = "control.claims"

// ClaimableIndex lists a tenant's accepted, not yet started turns by the
// sequence that made them active (oldest first is fairest).
func ClaimableIndex(tenant string) string { return "claimable:" + tenant }

// ClaimableSessionIndex is the same list for one session.
func ClaimableSessionIndex(tenant, session string) string {
	return "sclaimable:" + tenant + ":" + session
}

// LeasedIndex lists every running turn started by a claim, across tenants;
// members are "<tenant>|<turn_id>" (the sweeper's work list).
const LeasedIndex = "claims:leased"

// ClaimRunKey holds the run id (the lease token) of a claimed turn.
func ClaimRunKey(tenant, turn string) string { return "claimrun:" + tenant + ":" + turn }

// LeasedMember is a LeasedIndex member.
func LeasedMember(tenant, turn string) string { return tenant + "|" + turn }

// Claims is the claims projection.
type Claims struct{}

// Name implements projector.Projection.
func (Claims) Name() string { return ClaimsName }

// Filters implements projector.Projection.
func (Claims) Filters() []string { return nil }

// Project implements projector.Projection. It follows the turn lifecycle
// only: a turn becomes claimable when it is admitted as the active turn
// or dequeued, and stops being claimable when it starts or ends.
func (Claims) Project(_ context.Context, _ projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	ev := rec.Event
	tenant, session, seq := ev.GetTenantId(), ev.GetSessionId(), ev.GetSequence()
	b := projection.Batch{Projection: ClaimsName, Sequence: seq}
	claimable := func(turn string) {
		b.IndexAdds = append(b.IndexAdds,
			projection.IndexEntry{Index: ClaimableIndex(tenant), Member: turn, Score: float64(seq)},
			projection.IndexEntry{Index: ClaimableSessionIndex(tenant, session), Member: turn, Score: float64(seq)})
	}
	notClaimable := func(turn string) {
		b.IndexRemoves = append(b.IndexRemoves,
			projection.IndexEntry{Index: ClaimableIndex(tenant), Member: turn},
			projection.IndexEntry{Index: ClaimableSessionIndex(tenant, session), Member: turn})
	}
	switch ev.GetType() {
	case "turn.submitted":
		if ev.GetTurnSubmitted().GetAdmission() == "accepted" {
			claimable(ev.GetTurnId())
		}
	case "queue.changed":
		if p := ev.GetQueueChanged(); p.GetChange() == "dequeued" && p.GetTurnId() != "" {
			claimable(p.GetTurnId())
		}
	case "turn.started":
		notClaimable(ev.GetTurnId())
		if ev.GetRunId() != "" {
			b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: LeasedIndex, Member: LeasedMember(tenant, ev.GetTurnId()), Score: float64(seq)})
			b.Puts = append(b.Puts, projection.KV{Key: ClaimRunKey(tenant, ev.GetTurnId()), Value: []byte(ev.GetRunId())})
		}
	case "turn.completed", "turn.failed":
		notClaimable(ev.GetTurnId())
		b.IndexRemoves = append(b.IndexRemoves, projection.IndexEntry{Index: LeasedIndex, Member: LeasedMember(tenant, ev.GetTurnId())})
		b.Deletes = append(b.Deletes, ClaimRunKey(tenant, ev.GetTurnId()))
	}
	return b, nil
}

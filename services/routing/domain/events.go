package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
)

// The events of routing's decisions: the app loads state and appends; what
// is recorded, and under which ids, is decided here.

// Scope is what a routing fact is about: a turn (routing.v1.TurnScope) or
// a task being profiled (routing.v1.ProfileScope).
type Scope interface {
	GetSessionId() string
	GetThreadId() string
	GetTurnId() string
	GetTaskId() string
	GetRunId() string
}

// on is an event of typ on a scope.
func on(typ string, s Scope) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: typ, SessionId: s.GetSessionId(), ThreadId: s.GetThreadId(), TurnId: s.GetTurnId(),
		TaskId: s.GetTaskId(), RunId: s.GetRunId()}
}

// StableID is an event id derived from what makes a fact unique, so a
// retried command appends nothing twice (docs/adr/0001-retried-appends.md).
// Hashed: ids must be short and subject-safe.
func StableID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "evt_" + hex.EncodeToString(h.Sum(nil))[:40]
}

// ProfileResolved records the profile of a turn or a task.
func ProfileResolved(s Scope, profile *eventsv1.TaskProfile) *eventsv1.RuntimeEvent {
	e := on(events.TypeTaskProfileResolved, s)
	e.Payload = &eventsv1.RuntimeEvent_TaskProfileResolved{TaskProfileResolved: &eventsv1.TaskProfileResolved{Profile: profile}}
	return e
}

// CandidatesResolved records a turn's candidate set.
func CandidatesResolved(s *rv1.TurnScope, set *eventsv1.CandidateSet, profile *eventsv1.TaskProfile) *eventsv1.RuntimeEvent {
	e := on(events.TypeRoutingCandidatesResolved, s)
	e.Payload = &eventsv1.RuntimeEvent_RoutingCandidatesResolved{RoutingCandidatesResolved: &eventsv1.RoutingCandidatesResolved{CandidateSet: set, Profile: profile}}
	return e
}

// Routed records a route decision: the candidate set, then the outcome
// (routing.not_possible, routing.single_candidate or routing.decided).
func Routed(s *rv1.TurnScope, set *eventsv1.CandidateSet, profile *eventsv1.TaskProfile, outcome Outcome) []*eventsv1.RuntimeEvent {
	var decision *eventsv1.RuntimeEvent
	switch {
	case outcome.NotPossible != nil:
		decision = NotPossible(s, outcome.NotPossible)
	case set.GetSingleCandidate():
		decision = on(events.TypeRoutingSingleCandidate, s)
		decision.Payload = &eventsv1.RuntimeEvent_RoutingSingleCandidate{RoutingSingleCandidate: &eventsv1.RoutingSingleCandidate{Decision: outcome.Decision}}
	default:
		decision = on(events.TypeRoutingDecided, s)
		decision.Payload = &eventsv1.RuntimeEvent_RoutingDecided{RoutingDecided: &eventsv1.RoutingDecided{Decision: outcome.Decision}}
	}
	return []*eventsv1.RuntimeEvent{CandidatesResolved(s, set, profile), decision}
}

// NotPossible records that no model could be routed to (or fallen back to).
func NotPossible(s *rv1.TurnScope, np *eventsv1.RoutingNotPossible) *eventsv1.RuntimeEvent {
	e := on(events.TypeRoutingNotPossible, s)
	e.Payload = &eventsv1.RuntimeEvent_RoutingNotPossible{RoutingNotPossible: np}
	return e
}

// FallbackApplied records the move to the next candidate.
func FallbackApplied(s *rv1.TurnScope, fa *eventsv1.RoutingFallbackApplied) *eventsv1.RuntimeEvent {
	e := on(events.TypeRoutingFallbackApplied, s)
	e.Payload = &eventsv1.RuntimeEvent_RoutingFallbackApplied{RoutingFallbackApplied: fa}
	return e
}

// CostEstimated records an estimate.
func CostEstimated(s *rv1.TurnScope, est *eventsv1.CostEstimated) *eventsv1.RuntimeEvent {
	e := on(events.TypeCostEstimated, s)
	e.Payload = &eventsv1.RuntimeEvent_CostEstimated{CostEstimated: est}
	return e
}

// CostRecordedID is the id of the cost fact of one usage (usageKey: the
// session, turn and usage id), the same for every retry of its report.
func CostRecordedID(tenant, usageKey string) string { return StableID(tenant, usageKey, "cost") }

// CostRecorded records a usage's cost and the quota crossings its charge
// caused, each under an id derived from the usage, so a retried report
// appends none of them twice.
func CostRecorded(tenant, usageKey string, s *rv1.TurnScope, usageID string, rec *eventsv1.CostRecorded, low []*eventsv1.QuotaLow, blocked []*eventsv1.QuotaBlocked) []*eventsv1.RuntimeEvent {
	e := on(events.TypeCostRecorded, s)
	e.EventId = CostRecordedID(tenant, usageKey)
	e.RequestId = usageID
	e.Payload = &eventsv1.RuntimeEvent_CostRecorded{CostRecorded: rec}
	evs := []*eventsv1.RuntimeEvent{e}
	for _, l := range low {
		q := on(events.TypeQuotaLow, s)
		q.EventId = StableID(tenant, usageKey, "low", l.GetQuotaId(), l.GetDimension(), strconv.FormatFloat(l.GetThreshold(), 'g', -1, 64))
		q.Payload = &eventsv1.RuntimeEvent_QuotaLow{QuotaLow: l}
		evs = append(evs, q)
	}
	for _, b := range blocked {
		q := on(events.TypeQuotaBlocked, s)
		q.EventId = StableID(tenant, usageKey, "blocked", b.GetQuotaId(), b.GetDimension())
		q.Payload = &eventsv1.RuntimeEvent_QuotaBlocked{QuotaBlocked: b}
		evs = append(evs, q)
	}
	return evs
}

// LimitsRefused records why limits refused a call: the rate limits hit
// and the quotas blocked.
func LimitsRefused(s *rv1.TurnScope, hits []*eventsv1.RateLimitHit, blocked []*eventsv1.QuotaBlocked) []*eventsv1.RuntimeEvent {
	var evs []*eventsv1.RuntimeEvent
	for _, h := range hits {
		e := on(events.TypeRateLimitHit, s)
		e.Payload = &eventsv1.RuntimeEvent_RateLimitHit{RateLimitHit: h}
		evs = append(evs, e)
	}
	for _, b := range blocked {
		e := on(events.TypeQuotaBlocked, s)
		e.Payload = &eventsv1.RuntimeEvent_QuotaBlocked{QuotaBlocked: b}
		evs = append(evs, e)
	}
	return evs
}

// ConfigImported records the registry of a configuration file, once per
// tenant and digest.
func ConfigImported(tenant string, config *eventsv1.Registry) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: events.TypeLimitChanged, EventId: StableID(tenant, "config", config.GetConfigDigest()),
		Payload: &eventsv1.RuntimeEvent_LimitChanged{LimitChanged: &eventsv1.LimitChanged{Source: "config",
			Change: &eventsv1.LimitChanged_ConfigImported{ConfigImported: config}}}}
}

// LimitChanged records one change of the registry.
func LimitChanged(c *eventsv1.LimitChanged) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: events.TypeLimitChanged, Payload: &eventsv1.RuntimeEvent_LimitChanged{LimitChanged: c}}
}

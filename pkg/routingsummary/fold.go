// Package routingsummary folds routing, cost and limit facts into a
// RoutingLimitSummary. The routing service keeps one per turn and thread in
// its read model; the control service runs the same fold for the routing
// part of its thread read model, so neither service imports the other.
package routingsummary

import (
	"slices"

	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
)

// Stages of routing.not_possible: no decision could be taken, or a failed
// selection had nothing to fall back to.
const (
	StageDecide   = "decide"
	StageFallback = "fallback"
)

// resetTurnFacts clears what a thread summary says about its previous turn
// when a new turn's facts arrive; cost, quota and rate-limit facts are the
// thread's and stay.
func resetTurnFacts(s *routingv1.RoutingLimitSummary) {
	s.TaskProfile, s.CandidateCount, s.SingleCandidate, s.Decision, s.NotPossible = nil, 0, false, nil, nil
	s.FallbackCount, s.LastFallback, s.FailedModelIds = 0, nil, nil
	s.RoutingState = commonv1.FactState_FACT_STATE_UNKNOWN
}

// FoldThread applies one routing event to a thread's summary: the facts of
// the thread's latest routed turn, with cost, quota and rate-limit facts
// kept across turns. The control service runs it for its thread read model.
func FoldThread(s *routingv1.RoutingLimitSummary, e *eventsv1.RuntimeEvent) {
	if s.GetTurnId() != e.GetTurnId() {
		resetTurnFacts(s)
	}
	Fold(s, e)
}

// Fold applies one routing event to a summary.
func Fold(s *routingv1.RoutingLimitSummary, e *eventsv1.RuntimeEvent) {
	s.SessionId, s.ThreadId, s.TurnId, s.LastSequence = e.GetSessionId(), e.GetThreadId(), e.GetTurnId(), e.GetSequence()
	if s.Cost == nil {
		s.Cost = &routingv1.CostState{State: commonv1.FactState_FACT_STATE_UNKNOWN, RecordedUsage: &eventsv1.TokenUsage{}}
	}
	if s.QuotaState == commonv1.FactState_FACT_STATE_UNSPECIFIED {
		s.QuotaState = commonv1.FactState_FACT_STATE_UNKNOWN
	}
	if s.RateLimitState == commonv1.FactState_FACT_STATE_UNSPECIFIED {
		s.RateLimitState = commonv1.FactState_FACT_STATE_UNKNOWN
	}
	if s.RoutingState == commonv1.FactState_FACT_STATE_UNSPECIFIED {
		s.RoutingState = commonv1.FactState_FACT_STATE_UNKNOWN
	}
	known := commonv1.FactState_FACT_STATE_KNOWN
	switch {
	case e.GetTaskProfileResolved() != nil:
		s.TaskProfile, s.RoutingState = e.GetTaskProfileResolved().GetProfile(), known
	case e.GetRoutingCandidatesResolved() != nil:
		cs := e.GetRoutingCandidatesResolved().GetCandidateSet()
		s.CandidateCount, s.SingleCandidate, s.RoutingState = cs.GetCandidateCount(), cs.GetSingleCandidate(), known
		if p := e.GetRoutingCandidatesResolved().GetProfile(); p != nil {
			s.TaskProfile = p
		}
	case e.GetRoutingDecided() != nil:
		s.Decision, s.NotPossible, s.SingleCandidate, s.RoutingState = e.GetRoutingDecided().GetDecision(), nil, false, known
		s.CandidateCount = s.Decision.GetCandidateCount()
	case e.GetRoutingSingleCandidate() != nil:
		s.Decision, s.NotPossible, s.SingleCandidate, s.RoutingState = e.GetRoutingSingleCandidate().GetDecision(), nil, true, known
		s.CandidateCount = 1
	case e.GetRoutingNotPossible() != nil:
		np := e.GetRoutingNotPossible()
		s.NotPossible, s.RoutingState = np, commonv1.FactState_FACT_STATE_BLOCKED
		switch np.GetStage() {
		case StageDecide:
			s.Decision, s.CandidateCount, s.SingleCandidate = nil, 0, false
		case StageFallback:
			// The failure of the current selection was reported even though
			// nothing could replace it: it failed in this turn, so it is not
			// selected again and a retried report replays this outcome.
			if m := s.Decision.GetSelectedModelId(); m != "" && !slices.Contains(s.FailedModelIds, m) {
				s.FailedModelIds = append(s.FailedModelIds, m)
			}
		}
	case e.GetRoutingFallbackApplied() != nil:
		fa := e.GetRoutingFallbackApplied()
		s.Decision, s.NotPossible, s.LastFallback, s.FallbackCount, s.RoutingState = fa.GetDecision(), nil, fa, fa.GetFallbackCount(), known
		s.FailedModelIds = append(s.FailedModelIds, fa.GetFailedModelId())
	case e.GetCostEstimated() != nil:
		s.Cost.LastEstimatedNanos = e.GetCostEstimated().GetCost().GetTotalNanos()
	case e.GetCostRecorded() != nil:
		cr := e.GetCostRecorded()
		c := s.Cost
		c.State = known
		c.RecordedNanos += cr.GetCost().GetTotalNanos()
		c.RecordedCalls++
		u := c.RecordedUsage
		u.InputTokens += cr.GetUsage().GetInputTokens()
		u.OutputTokens += cr.GetUsage().GetOutputTokens()
		u.CachedInputTokens += cr.GetUsage().GetCachedInputTokens()
		u.ReasoningTokens += cr.GetUsage().GetReasoningTokens()
	case e.GetRateLimitHit() != nil:
		s.LastRateLimitHit, s.RateLimitState = e.GetRateLimitHit(), known
	case e.GetQuotaLow() != nil:
		s.LastQuotaLow, s.QuotaState = e.GetQuotaLow(), known
	case e.GetQuotaBlocked() != nil:
		s.LastQuotaBlocked, s.QuotaState = e.GetQuotaBlocked(), commonv1.FactState_FACT_STATE_BLOCKED
	}
}

// Cost: estimates and recorded usage.

package app

import (
	"context"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/services/routing/domain"
	"github.com/agentruntime/agentruntime/services/routing/readmodel"
)

func usage(u *rv1.Usage) *eventsv1.TokenUsage {
	return &eventsv1.TokenUsage{InputTokens: u.GetInputTokens(), OutputTokens: u.GetOutputTokens(), CachedInputTokens: u.GetCachedInputTokens(), ReasoningTokens: u.GetReasoningTokens()}
}

// EstimateCost prices a planned call and records the estimate.
func (a *App) EstimateCost(ctx context.Context, tenant string, req *rv1.EstimateCostRequest) (*rv1.EstimateCostResponse, error) {
	reg, err := a.registry(ctx, tenant)
	if err != nil {
		return nil, err
	}
	m, err := domain.ModelForRequest(reg, req.GetModelId())
	if err != nil {
		return nil, err
	}
	u := usage(req.GetUsage())
	cost, err := domain.Price(m, u)
	if err != nil {
		return nil, err
	}
	est := &eventsv1.CostEstimated{ProviderId: m.GetProviderId(), ModelId: m.GetId(), Usage: u, Cost: cost}
	e := domain.CostEstimated(req.GetScope(), est)
	appended, err := a.log.Append(ctx, turnAgg(tenant, req.GetScope()), eventlog.Any, e)
	if err != nil {
		return nil, err
	}
	return &rv1.EstimateCostResponse{Estimate: est, Write: command.Result{Appended: appended, Sequence: appended[0].Sequence}.Write()}, nil
}

// RecordCost prices a call's usage, charges the quotas (once per usage id)
// and records cost.recorded with the quota crossings it caused.
func (a *App) RecordCost(ctx context.Context, tenant string, req *rv1.RecordCostRequest) (*rv1.RecordCostResponse, error) {
	s := req.GetScope()
	reg, err := a.registry(ctx, tenant)
	if err != nil {
		return nil, err
	}
	m, err := domain.ModelForRequest(reg, req.GetModelId())
	if err != nil {
		return nil, err
	}
	u := usage(req.GetUsage())
	cost, err := domain.Price(m, u)
	if err != nil {
		return nil, err
	}
	// Nothing is recorded for a refused usage: pricing comes first. The
	// charge is idempotent per usage: a retry charges nothing again and
	// crosses nothing (the store does not remember the first attempt's
	// crossings), so it records the cost fact, with the same id, alone.
	plan := domain.PlanLimits(reg, m, 0, 0, domain.TotalTokens(u), cost.GetTotalNanos(), a.now())
	// A charge is of quotas only: the rate limits were consumed before the
	// call, and the store answers for the items it was given.
	plan.Rates, plan.RateRefs = nil, nil
	usageKey := s.GetSessionId() + "/" + s.GetTurnId() + "/" + req.GetUsageId()
	charged, err := a.limits.Apply(ctx, tenant, domain.LimitRequest{Mode: domain.Charge, Quotas: plan.Quotas, IdempotencyKey: "usage:" + usageKey})
	if err != nil {
		return nil, err
	}
	low, blocked := plan.Crossings(charged)
	rec := &eventsv1.CostRecorded{UsageId: req.GetUsageId(), ProviderId: m.GetProviderId(), ModelId: m.GetId(), Usage: u, Cost: cost}
	costID := domain.CostRecordedID(tenant, usageKey)
	var recorded *commonv1.WriteResult
	res, err := a.w.Execute(ctx, turnAgg(tenant, s), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		recorded = nil
		spent, err := readmodel.LoadSpent(ctx, a.store, a.log.Partitions(), tenant, s.GetSessionId(), s.GetTaskId())
		if err != nil {
			return nil, err
		}
		rec.Budgets = domain.AddSpent(domain.BudgetStates(reg, spent), cost.GetTotalNanos())
		evs := domain.CostRecorded(tenant, usageKey, s, req.GetUsageId(), rec, low, blocked)
		if _, ok := st.Seen(costID); ok {
			// A retry after the first attempt landed: its facts are in
			// the turn; answer with those of them this attempt would
			// append (the cost fact), appending nothing.
			recorded = &commonv1.WriteResult{Deduplicated: true}
			for _, e := range evs {
				if seq, ok := st.Seen(e.GetEventId()); ok {
					recorded.EventIds = append(recorded.EventIds, e.GetEventId())
					recorded.Sequence = max(recorded.Sequence, seq)
				}
			}
			return nil, nil
		}
		return evs, nil
	})
	if err != nil {
		return nil, err
	}
	if recorded == nil {
		recorded = res.Write()
	}
	return &rv1.RecordCostResponse{Recorded: rec, Limits: plan.Snapshot(charged), Write: recorded}, nil
}

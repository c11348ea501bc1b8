// Limits and budgets: checks, consumption and the joined summary.

package app

import (
	"context"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/routing/domain"
	"github.com/agentruntime/agentruntime/services/routing/readmodel"
)

// CheckLimits reports every limit of a call on a model, consuming nothing.
func (a *App) CheckLimits(ctx context.Context, tenant string, req *rv1.CheckLimitsRequest) (*rv1.CheckLimitsResponse, error) {
	reg, err := a.registry(ctx, tenant)
	if err != nil {
		return nil, err
	}
	m, err := domain.ModelForRequest(reg, req.GetModelId())
	if err != nil {
		return nil, err
	}
	plan := domain.PlanLimits(reg, m, req.GetRequests(), req.GetTokens(), 0, 0, a.now())
	res, err := a.limits.Apply(ctx, tenant, domain.LimitRequest{Mode: domain.Check, Rates: plan.Rates, Quotas: plan.Quotas})
	if err != nil {
		return nil, err
	}
	out := &rv1.CheckLimitsResponse{Allowed: res.Allowed, Limits: plan.Snapshot(res)}
	if _, _, retry := plan.Refusals(m, res); retry > 0 {
		out.RetryAfter = durationOf(retry)
	}
	return out, nil
}

// ConsumeLimits consumes a call's rate limits, all or nothing, and checks
// that no quota is exhausted. A refusal is recorded and answered with
// ResourceExhausted.
func (a *App) ConsumeLimits(ctx context.Context, tenant string, req *rv1.ConsumeLimitsRequest) (*rv1.ConsumeLimitsResponse, error) {
	s := req.GetScope()
	reg, err := a.registry(ctx, tenant)
	if err != nil {
		return nil, err
	}
	m, err := domain.ModelForRequest(reg, req.GetModelId())
	if err != nil {
		return nil, err
	}
	requests := req.GetRequests()
	if requests == 0 {
		requests = 1
	}
	plan := domain.PlanLimits(reg, m, requests, req.GetTokens(), 0, 0, a.now())
	res, err := a.limits.Apply(ctx, tenant, domain.LimitRequest{Mode: domain.Consume, Rates: plan.Rates, Quotas: plan.Quotas})
	if err != nil {
		return nil, err
	}
	if res.Allowed {
		return &rv1.ConsumeLimitsResponse{Limits: plan.Snapshot(res)}, nil
	}
	hits, blocked, retry := plan.Refusals(m, res)
	evs := domain.LimitsRefused(s, hits, blocked)
	// The refusal is a fact before it is an answer: append, then refuse.
	if _, err := a.log.AppendAtomic(ctx, turnAgg(tenant, s), eventlog.Any, evs...); err != nil {
		return nil, err
	}
	return nil, domain.ExhaustedError(m, hits, blocked, retry)
}

// GetRoutingLimitSummary reads the summaries of a session's threads.
func (a *App) GetRoutingLimitSummary(ctx context.Context, tenant string, req *rv1.GetRoutingLimitSummaryRequest) (*rv1.GetRoutingLimitSummaryResponse, error) {
	seq, err := projector.WaitForSession(ctx, a.log, a.store, readmodel.Name, tenant, req.GetSessionId(), req.GetMinSequence(), readTimeout)
	if err != nil {
		return nil, err
	}
	threads := []string{req.GetThreadId()}
	if req.GetThreadId() == "" {
		entries, err := a.store.Range(ctx, readmodel.ThreadIndex(tenant, req.GetSessionId()), projection.RangeQuery{})
		if err != nil {
			return nil, err
		}
		threads = threads[:0]
		for _, e := range entries {
			threads = append(threads, e.Member)
		}
	}
	out := &rv1.GetRoutingLimitSummaryResponse{Sequence: seq}
	for _, th := range threads {
		s := &rv1.RoutingLimitSummary{}
		found, err := readmodel.Load(ctx, a.store, readmodel.ThreadKey(tenant, req.GetSessionId(), th), s)
		if err != nil {
			return nil, err
		}
		if found {
			out.Threads = append(out.Threads, s)
		}
	}
	if len(out.Threads) == 0 {
		// No routing fact for this session (or thread) of this tenant:
		// NotFound rather than an empty "all fine".
		if req.GetThreadId() != "" {
			return nil, fault.NotFound("thread", req.GetThreadId())
		}
		return nil, fault.NotFound("session", req.GetSessionId())
	}
	return out, nil
}

// GetBudgets reads the cumulative budget states of the tenant, a session
// or a task.
func (a *App) GetBudgets(ctx context.Context, tenant string, req *rv1.GetBudgetsRequest) (*rv1.GetBudgetsResponse, error) {
	reg, err := a.registry(ctx, tenant)
	if err != nil {
		return nil, err
	}
	// A session's budgets answer the session's partition's position; the
	// tenant's (and a task's) the partition of min_sequence, 0 without it.
	seq, err := projector.WaitFor(ctx, a.log, a.store, readmodel.Name, req.GetMinSequence(), readTimeout)
	if req.GetSessionId() != "" {
		seq, err = projector.WaitForSession(ctx, a.log, a.store, readmodel.Name, tenant, req.GetSessionId(), req.GetMinSequence(), readTimeout)
	}
	if err != nil {
		return nil, err
	}
	spent, err := readmodel.LoadSpent(ctx, a.store, a.log.Partitions(), tenant, req.GetSessionId(), req.GetTaskId())
	if err != nil {
		return nil, err
	}
	states := domain.BudgetStates(reg, spent)
	return &rv1.GetBudgetsResponse{Budgets: states, Sequence: seq}, nil
}

// Routing a turn: its task profile, candidates, the decision and fallbacks.

package app

import (
	"context"
	"fmt"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/routing/domain"
	"github.com/agentruntime/agentruntime/services/routing/readmodel"
)

// ResolveTaskProfile records the profile of a turn or a task.
func (a *App) ResolveTaskProfile(ctx context.Context, tenant string, req *rv1.ResolveTaskProfileRequest) (*rv1.ResolveTaskProfileResponse, error) {
	s := req.GetScope()
	profile := domain.ResolveProfile(domain.ProfileInput{Kind: req.GetKind(), Source: req.GetSource(), RequiredCapabilities: req.GetRequiredCapabilities(),
		LatencyTarget: req.GetLatencyTarget(), BudgetClass: req.GetBudgetClass(), FallbackPolicy: req.GetFallbackPolicy(), Region: req.GetRegion()})
	e := domain.ProfileResolved(s, profile)
	agg := eventlog.Aggregate{Tenant: tenant, Session: s.GetSessionId(), Kind: readmodel.KindTurn, ID: s.GetTurnId()}
	if s.GetTurnId() == "" {
		// A task profiled before any turn runs it: task.profile.resolved
		// needs only the task, so it lives on the task's routing subject.
		agg = taskAgg(tenant, s.GetSessionId(), s.GetTaskId())
	}
	// A fact: the profile follows from the request alone and the latest
	// one counts, so it needs no expected sequence.
	appended, err := a.log.Append(ctx, agg, eventlog.Any, e)
	if err != nil {
		return nil, err
	}
	return &rv1.ResolveTaskProfileResponse{Profile: profile, Write: command.Result{Appended: appended, Sequence: appended[0].Sequence}.Write()}, nil
}

// routeInput loads what a candidate set is made from. The limit state of
// every model that passes the static checks is read in one Check.
func (a *App) routeInput(ctx context.Context, tenant string, s *rv1.TurnScope, r *rv1.RouteRequest, turn *rv1.RoutingLimitSummary) (domain.RouteInput, error) {
	if err := domain.ValidateEstimate(r.GetEstimatedInputTokens(), r.GetEstimatedOutputTokens()); err != nil {
		return domain.RouteInput{}, err
	}
	reg, err := a.registry(ctx, tenant)
	if err != nil {
		return domain.RouteInput{}, err
	}
	profile := r.GetProfile()
	if profile == nil {
		profile = turn.GetTaskProfile()
	}
	if profile == nil && s.GetTaskId() != "" {
		// The task's profile is an input from another aggregate (the
		// task's routing subject): read as the log holds it now, so a
		// profile resolved just before, on any replica, is found. The
		// turn's entry is held meanwhile; no command of this writer holds
		// a task's entry while it takes another, so the order cannot
		// deadlock.
		st, err := a.w.Refresh(ctx, taskAgg(tenant, s.GetSessionId(), s.GetTaskId()))
		if err != nil {
			return domain.RouteInput{}, err
		}
		tp := &eventsv1.TaskProfile{}
		found, err := readmodel.Load(ctx, st, readmodel.TaskProfileKey(tenant, s.GetSessionId(), s.GetTaskId()), tp)
		if err != nil {
			return domain.RouteInput{}, err
		}
		if found {
			profile = tp
		}
	}
	if profile == nil {
		return domain.RouteInput{}, &fault.Error{Kind: fault.KindPrecondition, Reason: domain.ReasonProfileNotResolved, Subject: "turn/" + s.GetTurnId(),
			Message: fmt.Sprintf("turn %q has no task profile: call ResolveTaskProfile first or pass route.profile", s.GetTurnId())}
	}
	in := domain.RouteInput{Registry: reg, Profile: profile, RequestedProvider: r.GetRequestedProviderId(), RequestedModel: r.GetRequestedModelId(),
		UserLock: r.GetUserLock(), EstInput: r.GetEstimatedInputTokens(), EstOutput: r.GetEstimatedOutputTokens(),
		Limits: map[string]*eventsv1.LimitStateSnapshot{}, Failed: turn.GetFailedModelIds()}
	// Spend adds up every turn of the tenant, session and task: an input
	// from many aggregates, read from the read model (bounded lag), not an
	// invariant of this turn.
	spent, err := readmodel.LoadSpent(ctx, a.store, a.log.Partitions(), tenant, s.GetSessionId(), s.GetTaskId())
	if err != nil {
		return in, err
	}
	in.Budgets = domain.BudgetStates(reg, spent)
	return in, a.checkModels(ctx, tenant, &in)
}

// checkModels fills in.Limits for the models that pass the static checks,
// in one limit store round trip.
func (a *App) checkModels(ctx context.Context, tenant string, in *domain.RouteInput) error {
	var req domain.LimitRequest
	type span struct {
		m            *eventsv1.Model
		plan         domain.LimitPlan
		rates, quota int
	}
	var spans []span
	now := a.now()
	for _, m := range in.Registry.GetModels() {
		if reasons, _ := domain.StaticExclusions(*in, m); len(reasons) > 0 {
			continue
		}
		plan := domain.PlanLimits(in.Registry, m, 1, in.EstInput+in.EstOutput, 0, 0, now)
		spans = append(spans, span{m, plan, len(req.Rates), len(req.Quotas)})
		req.Rates = append(req.Rates, plan.Rates...)
		req.Quotas = append(req.Quotas, plan.Quotas...)
	}
	if len(req.Rates)+len(req.Quotas) == 0 {
		return nil
	}
	res, err := a.limits.Apply(ctx, tenant, req)
	if err != nil {
		return err
	}
	for _, s := range spans {
		sub := domain.LimitResult{Rates: res.Rates[s.rates : s.rates+len(s.plan.Rates)], Quotas: res.Quotas[s.quota : s.quota+len(s.plan.Quotas)]}
		in.Limits[s.m.GetId()] = s.plan.Snapshot(sub)
	}
	return nil
}

// turnIn reads a turn's routing summary from the turn's aggregate as the
// writer holds it.
func turnIn(ctx context.Context, st projection.Store, tenant string, s *rv1.TurnScope) (*rv1.RoutingLimitSummary, error) {
	turn := &rv1.RoutingLimitSummary{}
	_, err := readmodel.Load(ctx, st, readmodel.TurnKey(tenant, s.GetSessionId(), s.GetTurnId()), turn)
	return turn, err
}

// ResolveCandidates records the candidate set of a turn.
func (a *App) ResolveCandidates(ctx context.Context, tenant string, req *rv1.ResolveCandidatesRequest) (*rv1.ResolveCandidatesResponse, error) {
	s := req.GetScope()
	var set *eventsv1.CandidateSet
	res, err := a.w.ExecuteNew(ctx, turnAgg(tenant, s), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		turn, err := turnIn(ctx, st, tenant, s)
		if err != nil {
			return nil, err
		}
		in, err := a.routeInput(ctx, tenant, s, req.GetRoute(), turn)
		if err != nil {
			return nil, err
		}
		set = domain.Candidates(in)
		return []*eventsv1.RuntimeEvent{domain.CandidatesResolved(s, set, in.Profile)}, nil
	})
	if err != nil {
		return nil, err
	}
	return &rv1.ResolveCandidatesResponse{CandidateSet: set, Write: res.Write()}, nil
}

// DecideRoute records the candidate set and the decision of a turn.
func (a *App) DecideRoute(ctx context.Context, tenant string, req *rv1.DecideRouteRequest) (*rv1.DecideRouteResponse, error) {
	s := req.GetScope()
	out := &rv1.DecideRouteResponse{}
	res, err := a.w.ExecuteNew(ctx, turnAgg(tenant, s), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		turn, err := turnIn(ctx, st, tenant, s)
		if err != nil {
			return nil, err
		}
		in, err := a.routeInput(ctx, tenant, s, req.GetRoute(), turn)
		if err != nil {
			return nil, err
		}
		set := domain.Candidates(in)
		outcome := domain.Decide(in, set)
		out.CandidateSet = set
		if outcome.NotPossible != nil {
			out.Outcome = &rv1.DecideRouteResponse_NotPossible{NotPossible: outcome.NotPossible}
		} else {
			out.Outcome = &rv1.DecideRouteResponse_Decision{Decision: outcome.Decision}
		}
		return domain.Routed(s, set, in.Profile, outcome), nil
	})
	if err != nil {
		return nil, err
	}
	out.Write = res.Write()
	return out, nil
}

// ApplyFallback moves the turn to the next candidate after a failure of
// its current model.
func (a *App) ApplyFallback(ctx context.Context, tenant string, req *rv1.ApplyFallbackRequest) (*rv1.ApplyFallbackResponse, error) {
	s := req.GetScope()
	out := &rv1.ApplyFallbackResponse{}
	replay := false
	res, err := a.w.Execute(ctx, turnAgg(tenant, s), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		replay = false
		turn, err := turnIn(ctx, st, tenant, s)
		if err != nil {
			return nil, err
		}
		prev := turn.GetDecision()
		step, err := domain.StepForFallback(s.GetTurnId(), prev, turn.GetFailedModelIds(), req.GetFailedModelId())
		if err != nil {
			return nil, err
		}
		if step == domain.FallbackReplay {
			replay = true
			return nil, nil
		}
		failedTurn := &rv1.RoutingLimitSummary{TaskProfile: turn.GetTaskProfile(), FailedModelIds: append(append([]string(nil), turn.GetFailedModelIds()...), req.GetFailedModelId())}
		route := &rv1.RouteRequest{RequestedProviderId: prev.GetRequestedProviderId(), RequestedModelId: prev.GetRequestedModelId()}
		in, err := a.routeInput(ctx, tenant, s, route, failedTurn)
		if err != nil {
			return nil, err
		}
		if in.Profile.GetFallbackPolicy() == eventsv1.FallbackPolicy_FALLBACK_POLICY_SAME_PROVIDER {
			in.SameProvider = prev.GetSelectedProviderId()
		}
		set := domain.Candidates(in)
		outcome := domain.Fallback(in, prev, req.GetFailedModelId(), req.GetFailureCategory(), set)
		if outcome.NotPossible != nil {
			out.Outcome = &rv1.ApplyFallbackResponse_NotPossible{NotPossible: outcome.NotPossible}
			return []*eventsv1.RuntimeEvent{domain.NotPossible(s, outcome.NotPossible)}, nil
		}
		fa := &eventsv1.RoutingFallbackApplied{FailedProviderId: prev.GetSelectedProviderId(), FailedModelId: req.GetFailedModelId(),
			FailureCategory: req.GetFailureCategory(), FailureDetail: req.GetFailureDetail(), Decision: outcome.Decision, FallbackCount: turn.GetFallbackCount() + 1}
		out.Outcome = &rv1.ApplyFallbackResponse_Fallback{Fallback: fa}
		return []*eventsv1.RuntimeEvent{domain.FallbackApplied(s, fa)}, nil
	})
	if err != nil {
		return nil, err
	}
	if replay {
		return a.replayFallback(ctx, tenant, s, req.GetFailedModelId())
	}
	out.Write = res.Write()
	return out, nil
}

// replayFallback answers a retried failure report with the outcome the
// first report recorded, read from the turn's log: the summary keeps only
// the last fallback, and a late retry may name an earlier one.
func (a *App) replayFallback(ctx context.Context, tenant string, s *rv1.TurnScope, model string) (*rv1.ApplyFallbackResponse, error) {
	var events []*eventsv1.RuntimeEvent
	if _, err := a.log.Read(ctx, []string{a.log.Subjects.Aggregate(turnAgg(tenant, s))}, eventlog.FromStart, func(r *eventlog.Record) error {
		events = append(events, r.Event)
		return nil
	}); err != nil {
		return nil, err
	}
	e, err := domain.EarlierFallback(events, model)
	if err != nil {
		return nil, err
	}
	out := &rv1.ApplyFallbackResponse{Write: &commonv1.WriteResult{Sequence: e.GetSequence(), EventIds: []string{e.GetEventId()}, Deduplicated: true}}
	if fa := e.GetRoutingFallbackApplied(); fa != nil {
		out.Outcome = &rv1.ApplyFallbackResponse_Fallback{Fallback: fa}
	} else {
		out.Outcome = &rv1.ApplyFallbackResponse_NotPossible{NotPossible: e.GetRoutingNotPossible()}
	}
	return out, nil
}

// Package api is the routing service's transport: every handler is
// kit.Call (the caller from the credentials, the use case, grpcerr.Status
// for its error), with the proto translation some RPCs need.
// Requests are validated by the server kit (protovalidate) before they
// arrive here.
package api

import (
	"context"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/routing/app"
)

// Handler implements rv1.RoutingServiceServer.
type Handler struct {
	rv1.UnimplementedRoutingServiceServer
	App *app.App
}

func (h *Handler) ResolveTaskProfile(ctx context.Context, r *rv1.ResolveTaskProfileRequest) (*rv1.ResolveTaskProfileResponse, error) {
	return kit.Call(ctx, r, kit.TenantOnly(h.App.ResolveTaskProfile))
}
func (h *Handler) ResolveCandidates(ctx context.Context, r *rv1.ResolveCandidatesRequest) (*rv1.ResolveCandidatesResponse, error) {
	return kit.Call(ctx, r, kit.TenantOnly(h.App.ResolveCandidates))
}
func (h *Handler) DecideRoute(ctx context.Context, r *rv1.DecideRouteRequest) (*rv1.DecideRouteResponse, error) {
	return kit.Call(ctx, r, kit.TenantOnly(h.App.DecideRoute))
}
func (h *Handler) ApplyFallback(ctx context.Context, r *rv1.ApplyFallbackRequest) (*rv1.ApplyFallbackResponse, error) {
	return kit.Call(ctx, r, kit.TenantOnly(h.App.ApplyFallback))
}
func (h *Handler) EstimateCost(ctx context.Context, r *rv1.EstimateCostRequest) (*rv1.EstimateCostResponse, error) {
	return kit.Call(ctx, r, kit.TenantOnly(h.App.EstimateCost))
}
func (h *Handler) RecordCost(ctx context.Context, r *rv1.RecordCostRequest) (*rv1.RecordCostResponse, error) {
	return kit.Call(ctx, r, kit.TenantOnly(h.App.RecordCost))
}
func (h *Handler) CheckLimits(ctx context.Context, r *rv1.CheckLimitsRequest) (*rv1.CheckLimitsResponse, error) {
	return kit.Call(ctx, r, kit.TenantOnly(h.App.CheckLimits))
}
func (h *Handler) ConsumeLimits(ctx context.Context, r *rv1.ConsumeLimitsRequest) (*rv1.ConsumeLimitsResponse, error) {
	return kit.Call(ctx, r, kit.TenantOnly(h.App.ConsumeLimits))
}
func (h *Handler) GetRoutingLimitSummary(ctx context.Context, r *rv1.GetRoutingLimitSummaryRequest) (*rv1.GetRoutingLimitSummaryResponse, error) {
	return kit.Call(ctx, r, kit.TenantOnly(h.App.GetRoutingLimitSummary))
}
func (h *Handler) GetModelRegistry(ctx context.Context, r *rv1.GetModelRegistryRequest) (*rv1.GetModelRegistryResponse, error) {
	return kit.Call(ctx, r, kit.TenantOnly(h.App.GetModelRegistry))
}
func (h *Handler) GetBudgets(ctx context.Context, r *rv1.GetBudgetsRequest) (*rv1.GetBudgetsResponse, error) {
	return kit.Call(ctx, r, kit.TenantOnly(h.App.GetBudgets))
}

func (h *Handler) UpdateModelRegistry(ctx context.Context, r *rv1.UpdateModelRegistryRequest) (*rv1.UpdateModelRegistryResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *rv1.UpdateModelRegistryRequest) (*rv1.UpdateModelRegistryResponse, error) {
		reg, w, err := h.App.UpdateRegistry(ctx, p.Tenant, p.Subject, registryChanges(r.GetChanges()))
		if err != nil {
			return nil, err
		}
		return &rv1.UpdateModelRegistryResponse{Registry: reg, Write: w}, nil
	})
}

func registryChanges(in []*rv1.ModelRegistryChange) []*eventsv1.LimitChanged {
	var changes []*eventsv1.LimitChanged
	for _, c := range in {
		lc := &eventsv1.LimitChanged{}
		switch ch := c.GetChange().(type) {
		case *rv1.ModelRegistryChange_UpsertProvider:
			lc.Change = &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: ch.UpsertProvider}
		case *rv1.ModelRegistryChange_RemoveProvider:
			lc.Change = &eventsv1.LimitChanged_ProviderRemoved{ProviderRemoved: ch.RemoveProvider}
		case *rv1.ModelRegistryChange_UpsertModel:
			lc.Change = &eventsv1.LimitChanged_ModelUpserted{ModelUpserted: ch.UpsertModel}
		case *rv1.ModelRegistryChange_RemoveModel:
			lc.Change = &eventsv1.LimitChanged_ModelRemoved{ModelRemoved: ch.RemoveModel}
		}
		changes = append(changes, lc)
	}
	return changes
}

func (h *Handler) UpdateLimitConfig(ctx context.Context, r *rv1.UpdateLimitConfigRequest) (*rv1.UpdateLimitConfigResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *rv1.UpdateLimitConfigRequest) (*rv1.UpdateLimitConfigResponse, error) {
		reg, w, err := h.App.UpdateRegistry(ctx, p.Tenant, p.Subject, limitChanges(r.GetChanges()))
		if err != nil {
			return nil, err
		}
		return &rv1.UpdateLimitConfigResponse{Registry: reg, Write: w}, nil
	})
}

func limitChanges(in []*rv1.LimitConfigChange) []*eventsv1.LimitChanged {
	var changes []*eventsv1.LimitChanged
	for _, c := range in {
		lc := &eventsv1.LimitChanged{}
		switch ch := c.GetChange().(type) {
		case *rv1.LimitConfigChange_SetRateLimit:
			lc.Change = &eventsv1.LimitChanged_RateLimitSet{RateLimitSet: ch.SetRateLimit}
		case *rv1.LimitConfigChange_RemoveRateLimit:
			lc.Change = &eventsv1.LimitChanged_RateLimitRemoved{RateLimitRemoved: ch.RemoveRateLimit}
		case *rv1.LimitConfigChange_SetQuota:
			lc.Change = &eventsv1.LimitChanged_QuotaSet{QuotaSet: ch.SetQuota}
		case *rv1.LimitConfigChange_RemoveQuota:
			lc.Change = &eventsv1.LimitChanged_QuotaRemoved{QuotaRemoved: ch.RemoveQuota}
		case *rv1.LimitConfigChange_SetBudget:
			lc.Change = &eventsv1.LimitChanged_BudgetSet{BudgetSet: ch.SetBudget}
		case *rv1.LimitConfigChange_RemoveBudget:
			lc.Change = &eventsv1.LimitChanged_BudgetRemoved{BudgetRemoved: ch.RemoveBudget}
		}
		changes = append(changes, lc)
	}
	return changes
}

// Package grpc is the routing service's transport: it takes the tenant from
// the credentials, calls the use case and maps errors in one place.
// Requests are validated by the server kit (protovalidate) before they
// arrive here.
package grpc

import (
	"context"
	"errors"

	"github.com/agentruntime/agentruntime/pkg/auth"
	ev "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/grpcerr"
	"github.com/agentruntime/agentruntime/services/routing/app"
	"github.com/agentruntime/agentruntime/services/routing/domain"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Handler implements rv1.RoutingServiceServer.
type Handler struct {
	rv1.UnimplementedRoutingServiceServer
	App *app.App
}

func tenant(ctx context.Context) (auth.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return p, status.Error(codes.Unauthenticated, "no credentials")
	}
	return p, nil
}

func call[Req, Resp any](ctx context.Context, req Req, fn func(context.Context, string, Req) (Resp, error)) (Resp, error) {
	var zero Resp
	p, err := tenant(ctx)
	if err != nil {
		return zero, err
	}
	resp, err := fn(ctx, p.Tenant, req)
	if err != nil {
		return zero, toStatus(err)
	}
	return resp, nil
}

// toStatus is the routing service's one mapping of errors onto statuses.
func toStatus(err error) error {
	var de *domain.Error
	if errors.As(err, &de) {
		switch de.Code {
		case domain.Invalid:
			return grpcerr.InvalidField(de.Field, "%s", de.Message)
		case domain.NotFound:
			return grpcerr.NotFound(de.Kind, de.ID)
		case domain.Precondition:
			return grpcerr.FailedPrecondition(de.Reason, de.Subject, de.Message, de.Metadata)
		case domain.Exhausted:
			return grpcerr.ResourceExhausted(de.Reason, de.Message, de.RetryAfter, de.Metadata)
		}
	}
	if st := grpcerr.Infrastructure(err); st != nil {
		return st
	}
	return status.Error(codes.Unavailable, "routing: "+err.Error())
}

func (h *Handler) ResolveTaskProfile(ctx context.Context, r *rv1.ResolveTaskProfileRequest) (*rv1.ResolveTaskProfileResponse, error) {
	return call(ctx, r, h.App.ResolveTaskProfile)
}
func (h *Handler) ResolveCandidates(ctx context.Context, r *rv1.ResolveCandidatesRequest) (*rv1.ResolveCandidatesResponse, error) {
	return call(ctx, r, h.App.ResolveCandidates)
}
func (h *Handler) DecideRoute(ctx context.Context, r *rv1.DecideRouteRequest) (*rv1.DecideRouteResponse, error) {
	return call(ctx, r, h.App.DecideRoute)
}
func (h *Handler) ApplyFallback(ctx context.Context, r *rv1.ApplyFallbackRequest) (*rv1.ApplyFallbackResponse, error) {
	return call(ctx, r, h.App.ApplyFallback)
}
func (h *Handler) EstimateCost(ctx context.Context, r *rv1.EstimateCostRequest) (*rv1.EstimateCostResponse, error) {
	return call(ctx, r, h.App.EstimateCost)
}
func (h *Handler) RecordCost(ctx context.Context, r *rv1.RecordCostRequest) (*rv1.RecordCostResponse, error) {
	return call(ctx, r, h.App.RecordCost)
}
func (h *Handler) CheckLimits(ctx context.Context, r *rv1.CheckLimitsRequest) (*rv1.CheckLimitsResponse, error) {
	return call(ctx, r, h.App.CheckLimits)
}
func (h *Handler) ConsumeLimits(ctx context.Context, r *rv1.ConsumeLimitsRequest) (*rv1.ConsumeLimitsResponse, error) {
	return call(ctx, r, h.App.ConsumeLimits)
}
func (h *Handler) GetRoutingLimitSummary(ctx context.Context, r *rv1.GetRoutingLimitSummaryRequest) (*rv1.GetRoutingLimitSummaryResponse, error) {
	return call(ctx, r, h.App.GetRoutingLimitSummary)
}
func (h *Handler) GetModelRegistry(ctx context.Context, r *rv1.GetModelRegistryRequest) (*rv1.GetModelRegistryResponse, error) {
	return call(ctx, r, h.App.GetModelRegistry)
}
func (h *Handler) GetBudgets(ctx context.Context, r *rv1.GetBudgetsRequest) (*rv1.GetBudgetsResponse, error) {
	return call(ctx, r, h.App.GetBudgets)
}

func (h *Handler) UpdateModelRegistry(ctx context.Context, r *rv1.UpdateModelRegistryRequest) (*rv1.UpdateModelRegistryResponse, error) {
	p, err := tenant(ctx)
	if err != nil {
		return nil, err
	}
	var changes []*ev.LimitChanged
	for _, c := range r.GetChanges() {
		lc := &ev.LimitChanged{}
		switch ch := c.GetChange().(type) {
		case *rv1.ModelRegistryChange_UpsertProvider:
			lc.Change = &ev.LimitChanged_ProviderUpserted{ProviderUpserted: ch.UpsertProvider}
		case *rv1.ModelRegistryChange_RemoveProvider:
			lc.Change = &ev.LimitChanged_ProviderRemoved{ProviderRemoved: ch.RemoveProvider}
		case *rv1.ModelRegistryChange_UpsertModel:
			lc.Change = &ev.LimitChanged_ModelUpserted{ModelUpserted: ch.UpsertModel}
		case *rv1.ModelRegistryChange_RemoveModel:
			lc.Change = &ev.LimitChanged_ModelRemoved{ModelRemoved: ch.RemoveModel}
		}
		changes = append(changes, lc)
	}
	reg, w, err := h.App.UpdateRegistry(ctx, p.Tenant, p.Subject, changes)
	if err != nil {
		return nil, toStatus(err)
	}
	return &rv1.UpdateModelRegistryResponse{Registry: reg, Write: w}, nil
}

func (h *Handler) UpdateLimitConfig(ctx context.Context, r *rv1.UpdateLimitConfigRequest) (*rv1.UpdateLimitConfigResponse, error) {
	p, err := tenant(ctx)
	if err != nil {
		return nil, err
	}
	var changes []*ev.LimitChanged
	for _, c := range r.GetChanges() {
		lc := &ev.LimitChanged{}
		switch ch := c.GetChange().(type) {
		case *rv1.LimitConfigChange_SetRateLimit:
			lc.Change = &ev.LimitChanged_RateLimitSet{RateLimitSet: ch.SetRateLimit}
		case *rv1.LimitConfigChange_RemoveRateLimit:
			lc.Change = &ev.LimitChanged_RateLimitRemoved{RateLimitRemoved: ch.RemoveRateLimit}
		case *rv1.LimitConfigChange_SetQuota:
			lc.Change = &ev.LimitChanged_QuotaSet{QuotaSet: ch.SetQuota}
		case *rv1.LimitConfigChange_RemoveQuota:
			lc.Change = &ev.LimitChanged_QuotaRemoved{QuotaRemoved: ch.RemoveQuota}
		case *rv1.LimitConfigChange_SetBudget:
			lc.Change = &ev.LimitChanged_BudgetSet{BudgetSet: ch.SetBudget}
		case *rv1.LimitConfigChange_RemoveBudget:
			lc.Change = &ev.LimitChanged_BudgetRemoved{BudgetRemoved: ch.RemoveBudget}
		}
		changes = append(changes, lc)
	}
	reg, w, err := h.App.UpdateRegistry(ctx, p.Tenant, p.Subject, changes)
	if err != nil {
		return nil, toStatus(err)
	}
	return &rv1.UpdateLimitConfigResponse{Registry: reg, Write: w}, nil
}

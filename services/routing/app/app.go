// Package app runs the routing service's commands. A command decides on
// its aggregate (a turn's routing, a tenant's registry) as this process's
// writer holds it (command.Writer: the aggregate's own subject folded by
// the read model's own fold), with counters from the limit store and
// cross-aggregate inputs (spend, a task's profile) read where they live,
// appends at the expected subject sequence and answers from the decision:
// no command waits for the read model (DESIGN §3,
// docs/adr/0005-hot-path.md). Reads wait for min_sequence.
package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/routing/domain"
	"github.com/agentruntime/agentruntime/services/routing/readmodel"
)

// Limiter is the limit store (adapters.Redis, adapters.Memory).
type Limiter interface {
	Apply(ctx context.Context, tenant string, req domain.LimitRequest) (domain.LimitResult, error)
}

// App is the routing service's use cases.
type App struct {
	log    *eventlog.Log
	store  projection.Store
	w      *command.Writer
	limits Limiter
	now    func() time.Time
	// config is the --models registry (nil: none); each tenant imports it
	// once per digest, as a limit.changed fact.
	config *eventsv1.Registry
	seeded sync.Map // tenant -> imported
	// held is each tenant's registry as this process last knew it (the
	// read model, or its own write): limits are then one Redis round trip
	// (the script), not two.
	held registries
}

// imported is a tenant's import of the config file: its digest and the
// sequence the registry reached with it (a read waits for it).
type imported struct {
	digest   string
	sequence uint64
}

// New builds the use cases.
func New(log *eventlog.Log, store projection.Store, limits Limiter, config *eventsv1.Registry) *App {
	return &App{log: log, store: store, limits: limits, now: time.Now, config: config,
		w:    command.NewWriter(log, readmodel.Projection{Subjects: log.Subjects}, command.Options{}),
		held: registries{byTenant: map[string]*eventsv1.Registry{}, gen: map[string]uint64{}}}
}

// Instrument records the command path's metrics (conflict retries) on mp.
func (a *App) Instrument(mp metric.MeterProvider) error { return a.w.Instrument(mp) }

// Applied is told by the routing projector after each batch is in the
// store (projector.WithAfterBatch): a tenant whose registry changed in it
// (on any replica) is read again from the read model on its next call.
func (a *App) Applied(batch []*eventlog.Record, _ uint64) {
	for _, rec := range batch {
		if rec.Event.GetLimitChanged() != nil {
			a.held.forget(rec.Event.GetTenantId())
		}
	}
}

// registries holds decoded registries per tenant. A generation per tenant
// keeps a read that started before a change from caching what it read.
// The registries are shared: callers must not modify them.
type registries struct {
	mu       sync.Mutex
	byTenant map[string]*eventsv1.Registry
	gen      map[string]uint64
}

// maxHeldRegistries bounds the registries held; past it the holder starts
// over (tenants reload on their next call).
const maxHeldRegistries = 10_000

// generation is the tenant's generation now: take it before a read or a
// write whose registry is then put.
func (r *registries) generation(tenant string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen[tenant]
}

func (r *registries) get(tenant string) (*eventsv1.Registry, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byTenant[tenant], r.gen[tenant]
}

func (r *registries) put(tenant string, gen uint64, reg *eventsv1.Registry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen[tenant] != gen {
		return
	}
	if len(r.byTenant) >= maxHeldRegistries {
		clear(r.byTenant)
	}
	r.byTenant[tenant] = reg
}

func (r *registries) forget(tenant string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen[tenant]++
	delete(r.byTenant, tenant)
}

// readTimeout bounds how long a read waits for min_sequence.
const readTimeout = 5 * time.Second

func turnAgg(tenant string, s *rv1.TurnScope) eventlog.Aggregate {
	return eventlog.Aggregate{Tenant: tenant, Session: s.GetSessionId(), Kind: readmodel.KindTurn, ID: s.GetTurnId()}
}

func registryAgg(tenant string) eventlog.Aggregate {
	return eventlog.Aggregate{Tenant: tenant, Session: eventlog.NoSession, Kind: readmodel.KindRegistry, ID: readmodel.RegistryID}
}

func scoped(typ string, s *rv1.TurnScope) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: typ, SessionId: s.GetSessionId(), ThreadId: s.GetThreadId(), TurnId: s.GetTurnId(),
		TaskId: s.GetTaskId(), RunId: s.GetRunId()}
}

// stableID is an event id derived from what makes a fact unique, so a
// retried command appends nothing twice (ADR 0001). Hashed: ids must be
// short and subject-safe, and JetStream de-duplicates across tenants.
func stableID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "evt_" + hex.EncodeToString(h.Sum(nil))[:40]
}

func taskAgg(tenant, session, task string) eventlog.Aggregate {
	agg := eventlog.Aggregate{Tenant: tenant, Session: session, Kind: readmodel.KindTask, ID: task}
	if agg.Session == "" {
		agg.Session = eventlog.NoSession
	}
	return agg
}

func write(res command.Result) *commonv1.WriteResult {
	w := &commonv1.WriteResult{Sequence: res.Sequence, Deduplicated: len(res.Appended) > 0}
	for _, a := range res.Appended {
		w.EventIds = append(w.EventIds, a.EventID)
		w.Deduplicated = w.Deduplicated && a.Duplicate
	}
	return w
}

// registry returns the tenant's registry (shared, read-only), importing the
// config file first when the tenant has not imported this version of it.
// It is held in process after the first read or write and read again after
// the projector applies a change to it (Applied): this process's own
// changes count at once, another replica's once the projector has them.
func (a *App) registry(ctx context.Context, tenant string) (*eventsv1.Registry, error) {
	if a.config != nil {
		if imp, ok := a.seeded.Load(tenant); !ok || imp.(imported).digest != a.config.GetConfigDigest() {
			gen := a.held.generation(tenant)
			res, err := a.w.Execute(ctx, registryAgg(tenant), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
				reg, err := readmodel.LoadRegistry(ctx, st, tenant)
				if err != nil || reg.GetConfigDigest() == a.config.GetConfigDigest() {
					return nil, err
				}
				return []*eventsv1.RuntimeEvent{{Type: "limit.changed", EventId: stableID(tenant, "config", a.config.GetConfigDigest()),
					Payload: &eventsv1.RuntimeEvent_LimitChanged{LimitChanged: &eventsv1.LimitChanged{Source: "config",
						Change: &eventsv1.LimitChanged_ConfigImported{ConfigImported: a.config}}}}}, nil
			})
			if err != nil {
				return nil, err
			}
			next, err := readmodel.LoadRegistry(ctx, res.State, tenant)
			if err != nil {
				return nil, err
			}
			a.held.put(tenant, gen, next)
			a.seeded.Store(tenant, imported{digest: a.config.GetConfigDigest(), sequence: res.Sequence})
		}
	}
	reg, gen := a.held.get(tenant)
	if reg != nil {
		return reg, nil
	}
	reg, err := readmodel.LoadRegistry(ctx, a.store, tenant)
	if err != nil {
		return nil, err
	}
	a.held.put(tenant, gen, reg)
	return reg, nil
}

// importedAt is the sequence the tenant's import of the config file
// reached in this process (0: none): a read of the registry waits for it.
func (a *App) importedAt(tenant string) uint64 {
	if imp, ok := a.seeded.Load(tenant); ok {
		return imp.(imported).sequence
	}
	return 0
}

// ResolveTaskProfile records the profile of a turn or a task.
func (a *App) ResolveTaskProfile(ctx context.Context, tenant string, req *rv1.ResolveTaskProfileRequest) (*rv1.ResolveTaskProfileResponse, error) {
	s := req.GetScope()
	profile := domain.ResolveProfile(domain.ProfileInput{Kind: req.GetKind(), Source: req.GetSource(), RequiredCapabilities: req.GetRequiredCapabilities(),
		LatencyTarget: req.GetLatencyTarget(), BudgetClass: req.GetBudgetClass(), FallbackPolicy: req.GetFallbackPolicy(), Region: req.GetRegion()})
	e := &eventsv1.RuntimeEvent{Type: "task.profile.resolved", SessionId: s.GetSessionId(), ThreadId: s.GetThreadId(), TurnId: s.GetTurnId(),
		TaskId: s.GetTaskId(), RunId: s.GetRunId(), Payload: &eventsv1.RuntimeEvent_TaskProfileResolved{TaskProfileResolved: &eventsv1.TaskProfileResolved{Profile: profile}}}
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
	return &rv1.ResolveTaskProfileResponse{Profile: profile, Write: write(command.Result{Appended: appended, Sequence: appended[0].Sequence})}, nil
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

// A turn's routing aggregate is usually created by its first decision (a
// worker routes each turn once, at its start), so ResolveCandidates and
// DecideRoute take a turn this process does not hold for new
// (command.Writer.ExecuteNew): the common first decision costs its append
// only; a turn routed or profiled before, elsewhere, costs one conflict
// and one read, then is decided again on what is there.

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
		e := scoped("routing.candidates.resolved", s)
		e.Payload = &eventsv1.RuntimeEvent_RoutingCandidatesResolved{RoutingCandidatesResolved: &eventsv1.RoutingCandidatesResolved{CandidateSet: set, Profile: in.Profile}}
		return []*eventsv1.RuntimeEvent{e}, nil
	})
	if err != nil {
		return nil, err
	}
	return &rv1.ResolveCandidatesResponse{CandidateSet: set, Write: write(res)}, nil
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
		cands := scoped("routing.candidates.resolved", s)
		cands.Payload = &eventsv1.RuntimeEvent_RoutingCandidatesResolved{RoutingCandidatesResolved: &eventsv1.RoutingCandidatesResolved{CandidateSet: set, Profile: in.Profile}}
		out.CandidateSet = set
		var decision *eventsv1.RuntimeEvent
		switch {
		case outcome.NotPossible != nil:
			decision = scoped("routing.not_possible", s)
			decision.Payload = &eventsv1.RuntimeEvent_RoutingNotPossible{RoutingNotPossible: outcome.NotPossible}
			out.Outcome = &rv1.DecideRouteResponse_NotPossible{NotPossible: outcome.NotPossible}
		case set.GetSingleCandidate():
			decision = scoped("routing.single_candidate", s)
			decision.Payload = &eventsv1.RuntimeEvent_RoutingSingleCandidate{RoutingSingleCandidate: &eventsv1.RoutingSingleCandidate{Decision: outcome.Decision}}
			out.Outcome = &rv1.DecideRouteResponse_Decision{Decision: outcome.Decision}
		default:
			decision = scoped("routing.decided", s)
			decision.Payload = &eventsv1.RuntimeEvent_RoutingDecided{RoutingDecided: &eventsv1.RoutingDecided{Decision: outcome.Decision}}
			out.Outcome = &rv1.DecideRouteResponse_Decision{Decision: outcome.Decision}
		}
		return []*eventsv1.RuntimeEvent{cands, decision}, nil
	})
	if err != nil {
		return nil, err
	}
	out.Write = write(res)
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
			e := scoped("routing.not_possible", s)
			e.Payload = &eventsv1.RuntimeEvent_RoutingNotPossible{RoutingNotPossible: outcome.NotPossible}
			out.Outcome = &rv1.ApplyFallbackResponse_NotPossible{NotPossible: outcome.NotPossible}
			return []*eventsv1.RuntimeEvent{e}, nil
		}
		fa := &eventsv1.RoutingFallbackApplied{FailedProviderId: prev.GetSelectedProviderId(), FailedModelId: req.GetFailedModelId(),
			FailureCategory: req.GetFailureCategory(), FailureDetail: req.GetFailureDetail(), Decision: outcome.Decision, FallbackCount: turn.GetFallbackCount() + 1}
		e := scoped("routing.fallback.applied", s)
		e.Payload = &eventsv1.RuntimeEvent_RoutingFallbackApplied{RoutingFallbackApplied: fa}
		out.Outcome = &rv1.ApplyFallbackResponse_Fallback{Fallback: fa}
		return []*eventsv1.RuntimeEvent{e}, nil
	})
	if err != nil {
		return nil, err
	}
	if replay {
		return a.replayFallback(ctx, tenant, s, req.GetFailedModelId())
	}
	out.Write = write(res)
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
	e := scoped("cost.estimated", req.GetScope())
	e.Payload = &eventsv1.RuntimeEvent_CostEstimated{CostEstimated: est}
	appended, err := a.log.Append(ctx, turnAgg(tenant, req.GetScope()), eventlog.Any, e)
	if err != nil {
		return nil, err
	}
	return &rv1.EstimateCostResponse{Estimate: est, Write: write(command.Result{Appended: appended, Sequence: appended[0].Sequence})}, nil
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
	costID := stableID(tenant, usageKey, "cost")
	var recorded *commonv1.WriteResult
	res, err := a.w.Execute(ctx, turnAgg(tenant, s), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		recorded = nil
		spent, err := readmodel.LoadSpent(ctx, a.store, a.log.Partitions(), tenant, s.GetSessionId(), s.GetTaskId())
		if err != nil {
			return nil, err
		}
		rec.Budgets = domain.AddSpent(domain.BudgetStates(reg, spent), cost.GetTotalNanos())
		e := scoped("cost.recorded", s)
		e.EventId = costID
		e.RequestId = req.GetUsageId()
		e.Payload = &eventsv1.RuntimeEvent_CostRecorded{CostRecorded: rec}
		evs := []*eventsv1.RuntimeEvent{e}
		for _, l := range low {
			q := scoped("quota.low", s)
			q.EventId = stableID(tenant, usageKey, "low", l.GetQuotaId(), l.GetDimension(), strconv.FormatFloat(l.GetThreshold(), 'g', -1, 64))
			q.Payload = &eventsv1.RuntimeEvent_QuotaLow{QuotaLow: l}
			evs = append(evs, q)
		}
		for _, b := range blocked {
			q := scoped("quota.blocked", s)
			q.EventId = stableID(tenant, usageKey, "blocked", b.GetQuotaId(), b.GetDimension())
			q.Payload = &eventsv1.RuntimeEvent_QuotaBlocked{QuotaBlocked: b}
			evs = append(evs, q)
		}
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
		recorded = write(res)
	}
	return &rv1.RecordCostResponse{Recorded: rec, Limits: plan.Snapshot(charged), Write: recorded}, nil
}

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
	var evs []*eventsv1.RuntimeEvent
	for _, h := range hits {
		e := scoped("rate_limit.hit", s)
		e.Payload = &eventsv1.RuntimeEvent_RateLimitHit{RateLimitHit: h}
		evs = append(evs, e)
	}
	for _, b := range blocked {
		e := scoped("quota.blocked", s)
		e.Payload = &eventsv1.RuntimeEvent_QuotaBlocked{QuotaBlocked: b}
		evs = append(evs, e)
	}
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

// GetModelRegistry reads the tenant's registry.
func (a *App) GetModelRegistry(ctx context.Context, tenant string, req *rv1.GetModelRegistryRequest) (*rv1.GetModelRegistryResponse, error) {
	if _, err := a.registry(ctx, tenant); err != nil {
		return nil, err
	}
	// A read: the read model, at least as recent as the caller's
	// min_sequence and this process's import of the config file. The
	// registry is session-less and a caller's token may be of a session:
	// two positions of two partitions, not ordered, each waited for in its
	// own. The answer's sequence is the registry's partition's checkpoint.
	for _, pos := range []uint64{req.GetMinSequence(), a.importedAt(tenant)} {
		if pos == 0 {
			continue
		}
		if _, err := projector.WaitFor(ctx, a.log, a.store, readmodel.Name, pos, readTimeout); err != nil {
			return nil, err
		}
	}
	seq, err := projector.Checkpoint(ctx, a.log.Of(tenant, ""), a.store, readmodel.Name)
	if err != nil {
		return nil, err
	}
	reg, err := readmodel.LoadRegistry(ctx, a.store, tenant)
	if err != nil {
		return nil, err
	}
	return &rv1.GetModelRegistryResponse{Registry: reg, Sequence: seq}, nil
}

// UpdateRegistry applies changes in order, all or none: each is one
// limit.changed fact, appended together after every one was validated on
// the registry the previous ones produce.
func (a *App) UpdateRegistry(ctx context.Context, tenant, subject string, changes []*eventsv1.LimitChanged) (*eventsv1.Registry, *commonv1.WriteResult, error) {
	if _, err := a.registry(ctx, tenant); err != nil {
		return nil, nil, err
	}
	var next *eventsv1.Registry
	gen := a.held.generation(tenant)
	res, err := a.w.Execute(ctx, registryAgg(tenant), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		reg, err := readmodel.LoadRegistry(ctx, st, tenant)
		if err != nil {
			return nil, err
		}
		var evs []*eventsv1.RuntimeEvent
		for i, c := range changes {
			c.Source, c.ChangedBy = "rpc", subject
			if reg, err = domain.Apply(reg, c); err != nil {
				if de, ok := fault.As(err); ok && de.Kind == fault.KindInvalid {
					return nil, de.Under(fmt.Sprintf("changes[%d]", i))
				}
				return nil, err
			}
			evs = append(evs, &eventsv1.RuntimeEvent{Type: "limit.changed", Payload: &eventsv1.RuntimeEvent_LimitChanged{LimitChanged: c}})
		}
		next = reg
		return evs, nil
	})
	if err != nil {
		return nil, nil, err
	}
	// Limits and decisions of this process use the new registry at once;
	// a change the projector applied meanwhile (Applied) leaves the next
	// call to read the read model instead.
	a.held.put(tenant, gen, next)
	return next, write(res), nil
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

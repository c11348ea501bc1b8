package domain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/routingsummary"
)

// RouteInput is everything a candidate set and a decision are made from.
type RouteInput struct {
	Registry          *eventsv1.Registry
	Profile           *eventsv1.TaskProfile
	RequestedProvider string
	RequestedModel    string
	UserLock          bool
	EstInput          int64
	EstOutput         int64
	// Limits is each model's limit state (a Check of its plan); a model
	// absent here was not checked (it was excluded before limits mattered).
	Limits map[string]*eventsv1.LimitStateSnapshot
	// Budgets apply to the call; their spent is before it.
	Budgets []*eventsv1.BudgetState
	// Failed models of the turn (fallback).
	Failed []string
	// SameProvider restricts candidates to one provider (fallback policy).
	SameProvider string
}

// StaticExclusions are the reasons a model cannot serve the profile that do
// not depend on limits: the app checks limits only for models that pass.
func StaticExclusions(in RouteInput, m *eventsv1.Model) (reasons []eventsv1.ExclusionReason, detail []string) {
	add := func(r eventsv1.ExclusionReason, format string, args ...any) {
		reasons = append(reasons, r)
		detail = append(detail, fmt.Sprintf(format, args...))
	}
	if m.GetDisabled() {
		add(eventsv1.ExclusionReason_EXCLUSION_REASON_POLICY_DENIED, "model is disabled in the registry")
	}
	p := FindProvider(in.Registry, m.GetProviderId())
	if p.GetCredentialStatus() != eventsv1.CredentialStatus_CREDENTIAL_STATUS_PRESENT {
		add(eventsv1.ExclusionReason_EXCLUSION_REASON_MISSING_CREDENTIALS, "provider %q credentials are %s", m.GetProviderId(),
			enums.Word(p.GetCredentialStatus()))
	}
	if gap := CapabilityGap(in.Profile, m); len(gap) > 0 {
		add(eventsv1.ExclusionReason_EXCLUSION_REASON_CAPABILITY_GAP, "lacks %s", capNames(gap))
	}
	if region := in.Profile.GetRegion(); region != "" && !servesRegion(p, m, region) {
		add(eventsv1.ExclusionReason_EXCLUSION_REASON_REGION, "not served from region %q", region)
	}
	if in.UserLock && m.GetId() != in.RequestedModel {
		add(eventsv1.ExclusionReason_EXCLUSION_REASON_USER_LOCK, "the user locked the turn to %q", in.RequestedModel)
	}
	if slices.Contains(in.Failed, m.GetId()) {
		add(eventsv1.ExclusionReason_EXCLUSION_REASON_PROVIDER_FAILED, "failed earlier in this turn")
	}
	if in.SameProvider != "" && m.GetProviderId() != in.SameProvider {
		add(eventsv1.ExclusionReason_EXCLUSION_REASON_POLICY_DENIED, "fallback policy same_provider keeps to %q", in.SameProvider)
	}
	if w := m.GetContextWindow(); w > 0 && in.EstInput > w {
		add(eventsv1.ExclusionReason_EXCLUSION_REASON_CONTEXT_WINDOW, "context window %d < %d estimated input tokens", w, in.EstInput)
	}
	if in.EstInput+in.EstOutput > 0 {
		if _, err := Price(m, &eventsv1.TokenUsage{InputTokens: in.EstInput, OutputTokens: in.EstOutput}); err != nil {
			add(eventsv1.ExclusionReason_EXCLUSION_REASON_PRICE_MISSING, "%v", err)
		}
	}
	return reasons, detail
}

func servesRegion(p *eventsv1.Provider, m *eventsv1.Model, region string) bool {
	if m.GetRegion() != "" {
		return m.GetRegion() == region
	}
	return slices.Contains(p.GetRegions(), region)
}

// CapabilityGap is what the profile requires and the model lacks.
func CapabilityGap(p *eventsv1.TaskProfile, m *eventsv1.Model) []eventsv1.Capability {
	var gap []eventsv1.Capability
	for _, c := range p.GetRequiredCapabilities() {
		if !slices.Contains(m.GetCapabilities(), c) {
			gap = append(gap, c)
		}
	}
	return gap
}

func capNames(caps []eventsv1.Capability) string {
	names := make([]string, len(caps))
	for i, c := range caps {
		names[i] = enums.Word(c)
	}
	return strings.Join(names, ", ")
}

// EstimatedCost of the input's token estimate on m (0 when unpriceable).
func EstimatedCost(in RouteInput, m *eventsv1.Model) int64 {
	c, err := Price(m, &eventsv1.TokenUsage{InputTokens: in.EstInput, OutputTokens: in.EstOutput})
	if err != nil {
		return 0
	}
	return c.GetTotalNanos()
}

// Candidates builds the candidate set: every registry model either a
// candidate (ranked best first) or excluded with every reason that applies.
func Candidates(in RouteInput) *eventsv1.CandidateSet {
	set := &eventsv1.CandidateSet{}
	for _, c := range in.Profile.GetRequiredCapabilities() {
		set.HardConstraints = append(set.HardConstraints, "capability:"+capNames([]eventsv1.Capability{c}))
	}
	if in.Profile.GetRegion() != "" {
		set.HardConstraints = append(set.HardConstraints, "region:"+in.Profile.GetRegion())
	}
	if in.UserLock {
		set.HardConstraints = append(set.HardConstraints, "user_lock:"+in.RequestedModel)
	}
	if in.RequestedModel != "" {
		set.Preferences = append(set.Preferences, "requested:"+in.RequestedModel)
	}
	if in.RequestedProvider != "" {
		set.Preferences = append(set.Preferences, "provider:"+in.RequestedProvider)
	}
	if in.Profile.GetBudgetClass() == "economy" {
		set.Preferences = append(set.Preferences, "cost", "latency:"+latencyName(in.Profile.GetLatencyTarget()))
	} else {
		set.Preferences = append(set.Preferences, "latency:"+latencyName(in.Profile.GetLatencyTarget()), "cost")
	}

	for _, m := range in.Registry.GetModels() {
		reasons, detail := StaticExclusions(in, m)
		var retry time.Duration
		if snap := in.Limits[m.GetId()]; snap != nil {
			for _, l := range snap.GetLimits() {
				if !l.GetExhausted() {
					continue
				}
				if l.GetKind() == "quota" {
					reasons = appendOnce(reasons, eventsv1.ExclusionReason_EXCLUSION_REASON_QUOTA_EXHAUSTED)
					detail = append(detail, fmt.Sprintf("quota %q (%s) exhausted", l.GetLimitId(), l.GetDimension()))
				} else {
					reasons = appendOnce(reasons, eventsv1.ExclusionReason_EXCLUSION_REASON_RATE_LIMITED)
					detail = append(detail, fmt.Sprintf("rate limit %q (%s) exhausted", l.GetLimitId(), l.GetDimension()))
					retry = max(retry, l.GetRetryAfter().AsDuration())
				}
			}
		}
		est := EstimatedCost(in, m)
		for _, b := range in.Budgets {
			if b.GetSpentNanos()+est > b.GetLimitNanos() || b.GetSpentNanos() >= b.GetLimitNanos() {
				reasons = appendOnce(reasons, eventsv1.ExclusionReason_EXCLUSION_REASON_BUDGET_EXCEEDED)
				detail = append(detail, fmt.Sprintf("%s budget %q: spent %d + estimated %d nano-USD exceeds %d",
					budgetScopeName(b.GetScope()), b.GetBudgetId(), b.GetSpentNanos(), est, b.GetLimitNanos()))
			}
		}
		if len(reasons) > 0 {
			x := &eventsv1.Exclusion{ProviderId: m.GetProviderId(), ModelId: m.GetId(), Reasons: reasons, Detail: strings.Join(detail, "; ")}
			if retry > 0 {
				x.RetryAfter = durationpb.New(retry)
			}
			set.Excluded = append(set.Excluded, x)
			continue
		}
		set.Candidates = append(set.Candidates, &eventsv1.Candidate{ProviderId: m.GetProviderId(), ModelId: m.GetId(),
			Capabilities: m.GetCapabilities(), LatencyClass: m.GetLatencyClass(), EstimatedCostNanos: est, ContextWindow: m.GetContextWindow()})
	}
	slices.SortStableFunc(set.Candidates, func(a, b *eventsv1.Candidate) int { return rank(in, a, b) })
	set.CandidateCount = int32(len(set.Candidates))
	set.SingleCandidate = len(set.Candidates) == 1
	return set
}

func rank(in RouteInput, a, b *eventsv1.Candidate) int {
	pref := func(c *eventsv1.Candidate) int {
		switch {
		case in.RequestedModel != "" && c.GetModelId() == in.RequestedModel:
			return 0
		case in.RequestedProvider != "" && c.GetProviderId() == in.RequestedProvider:
			return 1
		}
		return 2
	}
	target := in.Profile.GetLatencyTarget()
	dist := func(c *eventsv1.Candidate) int {
		d := int(c.GetLatencyClass()) - int(target)
		if c.GetLatencyClass() == eventsv1.LatencyClass_LATENCY_CLASS_UNSPECIFIED {
			d = 9 // unknown latency ranks last
		}
		return max(d, -d)
	}
	byCost := cmp.Compare(a.GetEstimatedCostNanos(), b.GetEstimatedCostNanos())
	byLatency := cmp.Compare(dist(a), dist(b))
	first, second := byLatency, byCost
	if in.Profile.GetBudgetClass() == "economy" {
		first, second = byCost, byLatency
	}
	return cmp.Or(cmp.Compare(pref(a), pref(b)), first, second, strings.Compare(a.GetModelId(), b.GetModelId()))
}

func appendOnce(rs []eventsv1.ExclusionReason, r eventsv1.ExclusionReason) []eventsv1.ExclusionReason {
	if slices.Contains(rs, r) {
		return rs
	}
	return append(rs, r)
}

func latencyName(l eventsv1.LatencyClass) string {
	return enums.Word(l)
}

func budgetScopeName(s eventsv1.BudgetScope) string {
	return enums.Word(s)
}

// Stages of routing.not_possible.
const (
	StageDecide   = routingsummary.StageDecide
	StageFallback = routingsummary.StageFallback
)

// Outcome of a decision: exactly one of Decision and NotPossible.
type Outcome struct {
	Decision    *eventsv1.RoutingDecision
	NotPossible *eventsv1.RoutingNotPossible
}

// Decide selects from a candidate set. One candidate is the single-candidate
// path; none is routing.not_possible naming every excluded model.
func Decide(in RouteInput, set *eventsv1.CandidateSet) Outcome {
	gap, override := requestGap(in, set)
	if len(set.GetCandidates()) == 0 {
		return Outcome{NotPossible: &eventsv1.RoutingNotPossible{Stage: StageDecide, Reason: noCandidateReason(set),
			Excluded: set.GetExcluded(), RequestedProviderId: in.RequestedProvider, RequestedModelId: in.RequestedModel,
			CapabilityGap: gap, RequiresUserOverride: override, LimitStateSnapshot: mergedLimits(in), Budgets: in.Budgets}}
	}
	sel := set.GetCandidates()[0]
	d := &eventsv1.RoutingDecision{
		RequestedProviderId: in.RequestedProvider, RequestedModelId: in.RequestedModel,
		SelectedProviderId: sel.GetProviderId(), SelectedModelId: sel.GetModelId(),
		CandidateCount: set.GetCandidateCount(), CapabilityGap: gap, RequiresUserOverride: override,
		LimitStateSnapshot: in.Limits[sel.GetModelId()], EstimatedCostNanos: sel.GetEstimatedCostNanos(),
		Budgets: in.Budgets, SelectedCapabilities: sel.GetCapabilities(), TaskKind: in.Profile.GetKind(),
		FallbackChain: chain(in.Profile, sel, set.GetCandidates()[1:]),
	}
	switch {
	case in.UserLock:
		d.RoutingMode, d.DecisionSource = eventsv1.RoutingMode_ROUTING_MODE_USER_LOCKED, "user_lock"
		d.DecisionReason = fmt.Sprintf("the user locked the turn to %q and it is available", sel.GetModelId())
	case len(set.GetCandidates()) == 1:
		d.RoutingMode, d.DecisionSource = eventsv1.RoutingMode_ROUTING_MODE_SINGLE_CANDIDATE, "registry"
		d.DecisionReason = fmt.Sprintf("%q is the only candidate (%d excluded)", sel.GetModelId(), len(set.GetExcluded()))
	case in.RequestedModel != "" && sel.GetModelId() == in.RequestedModel:
		d.RoutingMode, d.DecisionSource = eventsv1.RoutingMode_ROUTING_MODE_REQUESTED, "request"
		d.DecisionReason = fmt.Sprintf("the requested model %q is available", sel.GetModelId())
	default:
		d.RoutingMode, d.DecisionSource = eventsv1.RoutingMode_ROUTING_MODE_AUTO, "profile"
		d.DecisionReason = fmt.Sprintf("best of %d candidates by %s", len(set.GetCandidates()), strings.Join(set.GetPreferences(), ", "))
		if in.RequestedModel != "" {
			d.DecisionReason += fmt.Sprintf("; the requested model %q is not a candidate", in.RequestedModel)
		}
	}
	return Outcome{Decision: d}
}

// requestGap explains why a requested model was not honored when it lacks
// capabilities; a user lock on such a model needs the user to lift it.
func requestGap(in RouteInput, set *eventsv1.CandidateSet) ([]eventsv1.Capability, bool) {
	if in.RequestedModel == "" {
		return nil, false
	}
	m := FindModel(in.Registry, in.RequestedModel)
	var gap []eventsv1.Capability
	if m != nil {
		gap = CapabilityGap(in.Profile, m)
	}
	locked := in.UserLock && !slices.ContainsFunc(set.GetCandidates(), func(c *eventsv1.Candidate) bool { return c.GetModelId() == in.RequestedModel })
	return gap, locked
}

func chain(p *eventsv1.TaskProfile, sel *eventsv1.Candidate, rest []*eventsv1.Candidate) []string {
	var out []string
	for _, c := range rest {
		switch p.GetFallbackPolicy() {
		case eventsv1.FallbackPolicy_FALLBACK_POLICY_NONE:
			return nil
		case eventsv1.FallbackPolicy_FALLBACK_POLICY_SAME_PROVIDER:
			if c.GetProviderId() != sel.GetProviderId() {
				continue
			}
		}
		out = append(out, c.GetProviderId()+"/"+c.GetModelId())
	}
	return out
}

func noCandidateReason(set *eventsv1.CandidateSet) string {
	if len(set.GetExcluded()) == 0 {
		return "no candidate: the model registry is empty"
	}
	parts := make([]string, len(set.GetExcluded()))
	for i, x := range set.GetExcluded() {
		names := make([]string, len(x.GetReasons()))
		for j, r := range x.GetReasons() {
			names[j] = enums.Word(r)
		}
		parts[i] = fmt.Sprintf("%s/%s (%s: %s)", x.GetProviderId(), x.GetModelId(), strings.Join(names, ", "), x.GetDetail())
	}
	return "no candidate: " + strings.Join(parts, "; ")
}

func mergedLimits(in RouteInput) *eventsv1.LimitStateSnapshot {
	out := &eventsv1.LimitStateSnapshot{}
	seen := map[string]bool{}
	ids := make([]string, 0, len(in.Limits))
	for id := range in.Limits {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		for _, l := range in.Limits[id].GetLimits() {
			k := l.GetKind() + "/" + l.GetLimitId() + "/" + l.GetDimension()
			if !seen[k] {
				seen[k] = true
				out.Limits = append(out.Limits, l)
			}
		}
		out.Unknown = out.Unknown || in.Limits[id].GetUnknown()
	}
	return out
}

// Fallback moves a turn's decision past a failed model: the first model of
// the current fallback chain that is still a candidate in set (which the
// app resolved with every failed model excluded). prev is the turn's
// current decision.
func Fallback(in RouteInput, prev *eventsv1.RoutingDecision, failed string, cat eventsv1.FailureCategory, set *eventsv1.CandidateSet) Outcome {
	notPossible := func(reason string) Outcome {
		return Outcome{NotPossible: &eventsv1.RoutingNotPossible{Stage: StageFallback, Reason: reason, Excluded: set.GetExcluded(),
			RequestedProviderId: prev.GetRequestedProviderId(), RequestedModelId: prev.GetRequestedModelId(),
			LimitStateSnapshot: mergedLimits(in), Budgets: in.Budgets, FailureCategory: cat}}
	}
	if in.Profile.GetFallbackPolicy() == eventsv1.FallbackPolicy_FALLBACK_POLICY_NONE {
		return notPossible(fmt.Sprintf("%q failed and the fallback policy is none", failed))
	}
	byName := map[string]*eventsv1.Candidate{}
	for _, c := range set.GetCandidates() {
		byName[c.GetProviderId()+"/"+c.GetModelId()] = c
	}
	for i, name := range prev.GetFallbackChain() {
		next, ok := byName[name]
		if !ok {
			continue
		}
		var rest []string
		for _, n := range prev.GetFallbackChain()[i+1:] {
			if byName[n] != nil {
				rest = append(rest, n)
			}
		}
		d := &eventsv1.RoutingDecision{RoutingMode: eventsv1.RoutingMode_ROUTING_MODE_FALLBACK, DecisionSource: "fallback_chain",
			DecisionReason:      fmt.Sprintf("%q failed (%s); next in the fallback chain", failed, enums.Word(cat)),
			RequestedProviderId: prev.GetRequestedProviderId(), RequestedModelId: prev.GetRequestedModelId(),
			SelectedProviderId: next.GetProviderId(), SelectedModelId: next.GetModelId(), CandidateCount: set.GetCandidateCount(),
			FallbackChain: rest, LimitStateSnapshot: in.Limits[next.GetModelId()], EstimatedCostNanos: next.GetEstimatedCostNanos(),
			Budgets: in.Budgets, SelectedCapabilities: next.GetCapabilities(), TaskKind: in.Profile.GetKind()}
		return Outcome{Decision: d}
	}
	return notPossible(fmt.Sprintf("%q failed and no model of its fallback chain %v is still a candidate; %s", failed, prev.GetFallbackChain(), noCandidateReason(set)))
}

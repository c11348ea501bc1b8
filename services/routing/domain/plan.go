package domain

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Dimensions of limits.
const (
	DimRequests = "requests"
	DimTokens   = "tokens"
	DimCost     = "cost"
)

// RateRef ties a rate item to the limit it comes from.
type RateRef struct {
	Limit     *eventsv1.RateLimit
	Dimension string
	PerMinute int64
}

// QuotaRef ties a quota item to the quota it comes from.
type QuotaRef struct {
	Quota     *eventsv1.Quota
	Dimension string
	Limit     int64
}

// LimitPlan is every limit a call on one model is subject to, as items for
// the limit store and references to explain each.
type LimitPlan struct {
	Rates     []RateItem
	RateRefs  []RateRef
	Quotas    []QuotaItem
	QuotaRefs []QuotaRef
	// ResetsAt is when today's quota windows end.
	ResetsAt time.Time
}

// RateLimitsFor are the rate limits that apply to a model: tenant-wide ones,
// its provider's and its own.
func RateLimitsFor(r *eventsv1.Registry, m *eventsv1.Model) []*eventsv1.RateLimit {
	var out []*eventsv1.RateLimit
	for _, l := range r.GetRateLimits() {
		if (l.GetProviderId() == "" || l.GetProviderId() == m.GetProviderId()) && (l.GetModelId() == "" || l.GetModelId() == m.GetId()) {
			out = append(out, l)
		}
	}
	return out
}

// PlanLimits builds the items of a call on model m that uses requests and
// tokens (rate costs) and charges quotaTokens and quotaCost (quota costs; 0
// asks only "is the quota not exhausted"). now picks the quota day (UTC).
func PlanLimits(r *eventsv1.Registry, m *eventsv1.Model, requests, tokens, quotaTokens, quotaCost int64, now time.Time) LimitPlan {
	var p LimitPlan
	for _, l := range RateLimitsFor(r, m) {
		if l.GetRequestsPerMinute() > 0 {
			p.Rates = append(p.Rates, RateItem{Key: "rl:" + l.GetId() + ":" + DimRequests, Rate: l.GetRequestsPerMinute(), Period: time.Minute, Cost: requests})
			p.RateRefs = append(p.RateRefs, RateRef{l, DimRequests, l.GetRequestsPerMinute()})
		}
		if l.GetTokensPerMinute() > 0 {
			p.Rates = append(p.Rates, RateItem{Key: "rl:" + l.GetId() + ":" + DimTokens, Rate: l.GetTokensPerMinute(), Period: time.Minute, Cost: tokens})
			p.RateRefs = append(p.RateRefs, RateRef{l, DimTokens, l.GetTokensPerMinute()})
		}
	}
	day := now.UTC().Truncate(24 * time.Hour)
	p.ResetsAt = day.Add(24 * time.Hour)
	// The window outlives its day by an hour, so a charge in the day's last
	// moment still finds its counter.
	window := p.ResetsAt.Sub(now) + time.Hour
	stamp := day.Format("20060102")
	for _, q := range r.GetQuotas() {
		if q.GetTokensPerDay() > 0 {
			p.Quotas = append(p.Quotas, QuotaItem{Key: "q:" + q.GetId() + ":" + DimTokens + ":" + stamp, Limit: q.GetTokensPerDay(), Cost: quotaTokens, Window: window})
			p.QuotaRefs = append(p.QuotaRefs, QuotaRef{q, DimTokens, q.GetTokensPerDay()})
		}
		if q.GetCostNanosPerDay() > 0 {
			p.Quotas = append(p.Quotas, QuotaItem{Key: "q:" + q.GetId() + ":" + DimCost + ":" + stamp, Limit: q.GetCostNanosPerDay(), Cost: quotaCost, Window: window})
			p.QuotaRefs = append(p.QuotaRefs, QuotaRef{q, DimCost, q.GetCostNanosPerDay()})
		}
	}
	return p
}

// Snapshot turns a limit store result into the states a decision records.
func (p LimitPlan) Snapshot(res LimitResult) *eventsv1.LimitStateSnapshot {
	s := &eventsv1.LimitStateSnapshot{}
	for i, ref := range p.RateRefs {
		r := res.Rates[i]
		st := &eventsv1.LimitState{Kind: "rate_limit", LimitId: ref.Limit.GetId(), Dimension: ref.Dimension, Limit: ref.PerMinute,
			Remaining: min(r.Remaining, ref.PerMinute), Exhausted: !r.Allowed}
		if r.RetryAfter > 0 {
			st.RetryAfter = durationpb.New(r.RetryAfter)
		}
		s.Limits = append(s.Limits, st)
	}
	for i, ref := range p.QuotaRefs {
		q := res.Quotas[i]
		s.Limits = append(s.Limits, &eventsv1.LimitState{Kind: "quota", LimitId: ref.Quota.GetId(), Dimension: ref.Dimension, Limit: ref.Limit,
			Remaining: max(ref.Limit-q.After, 0), Exhausted: q.After >= ref.Limit || !q.Allowed})
	}
	return s
}

// Refusals are the facts of a refused Consume: one rate_limit.hit per
// refusing bucket, one quota.blocked per exhausted quota, and the longest
// retry-after.
func (p LimitPlan) Refusals(m *eventsv1.Model, res LimitResult) (hits []*eventsv1.RateLimitHit, blocked []*eventsv1.QuotaBlocked, retry time.Duration) {
	for i, ref := range p.RateRefs {
		if r := res.Rates[i]; !r.Allowed {
			hits = append(hits, &eventsv1.RateLimitHit{LimitId: ref.Limit.GetId(), ProviderId: m.GetProviderId(), ModelId: m.GetId(),
				Dimension: ref.Dimension, LimitPerMinute: ref.PerMinute, Requested: p.Rates[i].Cost, RetryAfter: durationpb.New(r.RetryAfter)})
			retry = max(retry, r.RetryAfter)
		}
	}
	for i, ref := range p.QuotaRefs {
		if q := res.Quotas[i]; !q.Allowed {
			blocked = append(blocked, quotaBlocked(ref, q.After, p.ResetsAt))
		}
	}
	return hits, blocked, retry
}

// Crossings are the facts of a charge: quota.low for every threshold the
// charge crossed, quota.blocked when it reached the limit. Each crossing
// happens in exactly one charge (the store orders them), so each fact is
// emitted once.
func (p LimitPlan) Crossings(res LimitResult) (low []*eventsv1.QuotaLow, blocked []*eventsv1.QuotaBlocked) {
	for i, ref := range p.QuotaRefs {
		q := res.Quotas[i]
		thresholds := ref.Quota.GetLowThresholds()
		if len(thresholds) == 0 {
			thresholds = []float64{0.8}
		}
		for _, f := range thresholds {
			mark := int64(f * float64(ref.Limit))
			if q.Before < mark && q.After >= mark && q.After < ref.Limit {
				low = append(low, &eventsv1.QuotaLow{QuotaId: ref.Quota.GetId(), Dimension: ref.Dimension, Used: q.After, Limit: ref.Limit,
					Threshold: f, ResetsAt: timestamp(p.ResetsAt)})
			}
		}
		if q.Before < ref.Limit && q.After >= ref.Limit {
			blocked = append(blocked, quotaBlocked(ref, q.After, p.ResetsAt))
		}
	}
	return low, blocked
}

func quotaBlocked(ref QuotaRef, used int64, resets time.Time) *eventsv1.QuotaBlocked {
	return &eventsv1.QuotaBlocked{QuotaId: ref.Quota.GetId(), Dimension: ref.Dimension, Used: used, Limit: ref.Limit, ResetsAt: timestamp(resets)}
}

// ExhaustedError is the caller's answer to a refused Consume.
func ExhaustedError(m *eventsv1.Model, hits []*eventsv1.RateLimitHit, blocked []*eventsv1.QuotaBlocked, retry time.Duration) error {
	e := &fault.Error{Kind: fault.KindExhausted, Subject: "model/" + m.GetId(), RetryAfter: retry, Metadata: map[string]string{"model_id": m.GetId()}}
	switch {
	case len(hits) > 0:
		h := hits[0]
		e.Reason = ReasonRateLimited
		e.Message = fmt.Sprintf("rate limit %q (%d %s per minute) refuses %d more for model %q; retry after %v",
			h.GetLimitId(), h.GetLimitPerMinute(), h.GetDimension(), h.GetRequested(), m.GetId(), retry.Round(time.Millisecond))
		e.Metadata["limit_id"], e.Metadata["dimension"] = h.GetLimitId(), h.GetDimension()
	case len(blocked) > 0:
		b := blocked[0]
		e.Reason = ReasonQuotaExhausted
		e.Message = fmt.Sprintf("quota %q is exhausted (%d of %d %s used today); it resets at %s",
			b.GetQuotaId(), b.GetUsed(), b.GetLimit(), b.GetDimension(), b.GetResetsAt().AsTime().Format(time.RFC3339))
		e.Metadata["quota_id"], e.Metadata["dimension"] = b.GetQuotaId(), b.GetDimension()
	}
	return e
}

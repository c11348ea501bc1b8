package domain

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func limitRegistry() *eventsv1.Registry {
	return &eventsv1.Registry{
		RateLimits: []*eventsv1.RateLimit{
			{Id: "tenant-rpm", RequestsPerMinute: 100},
			{Id: "p1-both", ProviderId: "p1", RequestsPerMinute: 10, TokensPerMinute: 5000},
			{Id: "p2-tpm", ProviderId: "p2", TokensPerMinute: 9},
			{Id: "m1-rpm", ModelId: "m1", RequestsPerMinute: 2},
			{Id: "m2-rpm", ModelId: "m2", RequestsPerMinute: 3},
		},
		Quotas: []*eventsv1.Quota{
			{Id: "daily", TokensPerDay: 1000, CostNanosPerDay: 500, LowThresholds: []float64{0.5, 0.9}},
			{Id: "cost-only", CostNanosPerDay: 100},
		},
	}
}

func TestRateLimitsForAModel(t *testing.T) {
	reg := limitRegistry()
	for _, c := range []struct {
		model *eventsv1.Model
		want  []string
	}{
		{&eventsv1.Model{Id: "m1", ProviderId: "p1"}, []string{"tenant-rpm", "p1-both", "m1-rpm"}},
		{&eventsv1.Model{Id: "m2", ProviderId: "p2"}, []string{"tenant-rpm", "p2-tpm", "m2-rpm"}},
		{&eventsv1.Model{Id: "m3", ProviderId: "p3"}, []string{"tenant-rpm"}},
	} {
		var got []string
		for _, l := range RateLimitsFor(reg, c.model) {
			got = append(got, l.GetId())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.model.GetId(), got, c.want)
		}
	}
}

func TestPlanLimits(t *testing.T) {
	now := time.Date(2026, 3, 14, 22, 30, 0, 0, time.FixedZone("x", -5*3600)) // 2026-03-15 03:30 UTC
	p := PlanLimits(limitRegistry(), &eventsv1.Model{Id: "m1", ProviderId: "p1"}, 1, 700, 40, 9, now)
	wantRates := []RateItem{
		{Key: "rl:tenant-rpm:requests", Rate: 100, Period: time.Minute, Cost: 1},
		{Key: "rl:p1-both:requests", Rate: 10, Period: time.Minute, Cost: 1},
		{Key: "rl:p1-both:tokens", Rate: 5000, Period: time.Minute, Cost: 700},
		{Key: "rl:m1-rpm:requests", Rate: 2, Period: time.Minute, Cost: 1},
	}
	if !slices.Equal(p.Rates, wantRates) || len(p.RateRefs) != len(p.Rates) {
		t.Fatalf("rates %+v", p.Rates)
	}
	resets := time.Date(2026, 3, 16, 0, 0, 0, 0, time.UTC)
	window := resets.Sub(now) + time.Hour
	wantQuotas := []QuotaItem{
		{Key: "q:daily:tokens:20260315", Limit: 1000, Cost: 40, Window: window},
		{Key: "q:daily:cost:20260315", Limit: 500, Cost: 9, Window: window},
		{Key: "q:cost-only:cost:20260315", Limit: 100, Cost: 9, Window: window},
	}
	if !slices.Equal(p.Quotas, wantQuotas) || !p.ResetsAt.Equal(resets) {
		t.Fatalf("quotas %+v resets %v", p.Quotas, p.ResetsAt)
	}
	for i, ref := range p.QuotaRefs {
		if ref.Limit != wantQuotas[i].Limit || !strings.Contains(wantQuotas[i].Key, ":"+ref.Dimension+":") {
			t.Fatalf("quota ref %d %+v", i, ref)
		}
	}
	// The last moment of a day still plans into that day's window.
	late := PlanLimits(limitRegistry(), &eventsv1.Model{Id: "m1"}, 1, 0, 0, 0, time.Date(2026, 3, 15, 23, 59, 59, 0, time.UTC))
	if late.Quotas[0].Key != "q:daily:tokens:20260315" || late.Quotas[0].Window != time.Hour+time.Second {
		t.Fatalf("late %+v", late.Quotas[0])
	}
}

func TestSnapshotAndRefusals(t *testing.T) {
	reg := limitRegistry()
	m := &eventsv1.Model{Id: "m1", ProviderId: "p1"}
	p := PlanLimits(reg, m, 1, 700, 0, 0, time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC))
	res := LimitResult{
		Rates: []RateResult{
			{Allowed: true, Remaining: 1 << 40}, // remaining is capped at the limit
			{Allowed: false, Remaining: 0, RetryAfter: 3 * time.Second},
			{Allowed: true, Remaining: 4300},
			{Allowed: false, Remaining: 0, RetryAfter: 20 * time.Second},
		},
		Quotas: []QuotaResult{
			{Allowed: true, Before: 10, After: 10},
			{Allowed: false, Before: 500, After: 500},
			{Allowed: true, Before: 120, After: 120}, // over the limit (charged past it): exhausted
		},
	}
	snap := p.Snapshot(res)
	type st struct {
		kind, id, dim    string
		limit, remaining int64
		exhausted        bool
		retry            time.Duration
	}
	want := []st{
		{"rate_limit", "tenant-rpm", DimRequests, 100, 100, false, 0},
		{"rate_limit", "p1-both", DimRequests, 10, 0, true, 3 * time.Second},
		{"rate_limit", "p1-both", DimTokens, 5000, 4300, false, 0},
		{"rate_limit", "m1-rpm", DimRequests, 2, 0, true, 20 * time.Second},
		{"quota", "daily", DimTokens, 1000, 990, false, 0},
		{"quota", "daily", DimCost, 500, 0, true, 0},
		{"quota", "cost-only", DimCost, 100, 0, true, 0},
	}
	if len(snap.GetLimits()) != len(want) {
		t.Fatalf("snapshot %v", snap)
	}
	for i, l := range snap.GetLimits() {
		got := st{l.GetKind(), l.GetLimitId(), l.GetDimension(), l.GetLimit(), l.GetRemaining(), l.GetExhausted(), l.GetRetryAfter().AsDuration()}
		if got != want[i] {
			t.Errorf("limit %d: %+v, want %+v", i, got, want[i])
		}
	}

	hits, blocked, retry := p.Refusals(m, res)
	if len(hits) != 2 || hits[0].GetLimitId() != "p1-both" || hits[0].GetRequested() != 1 || hits[0].GetModelId() != "m1" || hits[0].GetProviderId() != "p1" ||
		hits[1].GetLimitId() != "m1-rpm" || hits[1].GetRetryAfter().AsDuration() != 20*time.Second || retry != 20*time.Second {
		t.Fatalf("hits %v retry %v", hits, retry)
	}
	if len(blocked) != 1 || blocked[0].GetQuotaId() != "daily" || blocked[0].GetDimension() != DimCost || blocked[0].GetUsed() != 500 ||
		!blocked[0].GetResetsAt().AsTime().Equal(p.ResetsAt) {
		t.Fatalf("blocked %v", blocked)
	}

	// The caller's answer names the first refusing rate limit...
	var de *fault.Error
	if err := ExhaustedError(m, hits, blocked, retry); !errors.As(err, &de) || de.Kind != fault.KindExhausted || de.Reason != ReasonRateLimited ||
		de.RetryAfter != 20*time.Second || de.Metadata["limit_id"] != "p1-both" || de.Subject != "model/m1" {
		t.Fatalf("rate refusal %+v", de)
	}
	// ...or, with no rate refusal, the exhausted quota.
	if err := ExhaustedError(m, nil, blocked, 0); !errors.As(err, &de) || de.Reason != ReasonQuotaExhausted ||
		de.Metadata["quota_id"] != "daily" || !strings.Contains(de.Message, "500 of 500 cost used") {
		t.Fatalf("quota refusal %+v", de)
	}
}

func TestCrossings(t *testing.T) {
	reg := &eventsv1.Registry{Quotas: []*eventsv1.Quota{
		{Id: "q", TokensPerDay: 1000, LowThresholds: []float64{0.5, 0.9}},
		{Id: "d", TokensPerDay: 100}, // default threshold 0.8
	}}
	p := PlanLimits(reg, &eventsv1.Model{Id: "m"}, 0, 0, 0, 0, time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC))
	for _, c := range []struct {
		name        string
		q, d        QuotaResult
		low         []string // quota@threshold
		blockedWant []string
	}{
		{name: "below every threshold", q: QuotaResult{Before: 0, After: 499}, d: QuotaResult{Before: 0, After: 79}},
		{name: "reaching a threshold crosses it", q: QuotaResult{Before: 499, After: 500}, d: QuotaResult{Before: 79, After: 80},
			low: []string{"q@0.5", "d@0.8"}},
		{name: "already past: no second crossing", q: QuotaResult{Before: 500, After: 600}, d: QuotaResult{Before: 80, After: 99}},
		{name: "one charge crossing two thresholds", q: QuotaResult{Before: 100, After: 950}, low: []string{"q@0.5", "q@0.9"}},
		{name: "reaching the limit blocks instead of low", q: QuotaResult{Before: 100, After: 1000}, blockedWant: []string{"q"}},
		{name: "jumping past the limit blocks once", q: QuotaResult{Before: 950, After: 5000}, d: QuotaResult{Before: 0, After: 100},
			blockedWant: []string{"q", "d"}},
		{name: "already blocked: nothing new", q: QuotaResult{Before: 1000, After: 1200}, d: QuotaResult{Before: 100, After: 101}},
	} {
		t.Run(c.name, func(t *testing.T) {
			low, blocked := p.Crossings(LimitResult{Quotas: []QuotaResult{c.q, c.d}})
			var gotLow, gotBlocked []string
			for _, l := range low {
				gotLow = append(gotLow, l.GetQuotaId()+"@"+strconv.FormatFloat(l.GetThreshold(), 'g', -1, 64))
				if l.GetLimit() == 0 || l.GetUsed() == 0 || l.GetResetsAt() == nil {
					t.Fatalf("low %v", l)
				}
			}
			for _, b := range blocked {
				gotBlocked = append(gotBlocked, b.GetQuotaId())
			}
			if !slices.Equal(gotLow, c.low) || !slices.Equal(gotBlocked, c.blockedWant) {
				t.Fatalf("low %v blocked %v; want %v %v", gotLow, gotBlocked, c.low, c.blockedWant)
			}
		})
	}
}

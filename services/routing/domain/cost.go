package domain

import (
	ev "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Usage is a call's token counts (validated non-negative by the API).
type Usage = ev.TokenUsage

// Price prices a usage from the model's registry prices. A component with
// tokens but no price is PRICE_MISSING: an unpriced call must not be
// recorded as free.
func Price(m *ev.Model, u *ev.TokenUsage) (*ev.CostBreakdown, error) {
	p := m.GetPrices()
	if p == nil {
		p = &ev.ModelPrices{}
	}
	c := &ev.CostBreakdown{}
	for _, part := range []struct {
		name   string
		tokens int64
		price  *int64
		out    *int64
	}{
		{"input", u.GetInputTokens(), p.InputNanosPerMillion, &c.InputNanos},
		{"output", u.GetOutputTokens(), p.OutputNanosPerMillion, &c.OutputNanos},
		{"cached_input", u.GetCachedInputTokens(), p.CachedInputNanosPerMillion, &c.CachedInputNanos},
		{"reasoning", u.GetReasoningTokens(), p.ReasoningNanosPerMillion, &c.ReasoningNanos},
	} {
		if part.tokens == 0 {
			continue
		}
		if part.price == nil {
			e := precondition(ReasonPriceMissing, "model/"+m.GetId(),
				"model %q has no %s price in the registry; %d %s tokens cannot be priced", m.GetId(), part.name, part.tokens, part.name)
			e.Metadata = map[string]string{"model_id": m.GetId(), "component": part.name}
			return nil, e
		}
		*part.out = perMillion(part.tokens, *part.price)
		c.TotalNanos += *part.out
	}
	return c, nil
}

// perMillion is tokens*price/1e6 without overflowing int64 for any
// realistic count (whole millions and the remainder are priced apart).
func perMillion(tokens, price int64) int64 {
	return (tokens/1_000_000)*price + (tokens%1_000_000)*price/1_000_000
}

// TotalTokens counts every token of a usage (quota and rate limit unit).
func TotalTokens(u *ev.TokenUsage) int64 {
	return u.GetInputTokens() + u.GetOutputTokens() + u.GetCachedInputTokens() + u.GetReasoningTokens()
}

package domain

import (
	"math"
	"math/bits"

	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Usage is a call's token counts (validated non-negative by the API).
type Usage = eventsv1.TokenUsage

// MaxTokens bounds each token count of one call: far above any model's
// context, low enough that sums of counts and their prices stay exact in
// int64 nano-USD for any realistic price.
const MaxTokens = 1_000_000_000_000

// Price prices a usage from the model's registry prices. A component with
// tokens but no price is PRICE_MISSING: an unpriced call must not be
// recorded as free. Amounts round down to the nano-USD.
func Price(m *eventsv1.Model, u *eventsv1.TokenUsage) (*eventsv1.CostBreakdown, error) {
	p := m.GetPrices()
	if p == nil {
		p = &eventsv1.ModelPrices{}
	}
	c := &eventsv1.CostBreakdown{}
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
		field := "usage." + part.name + "_tokens"
		if part.tokens < 0 || part.tokens > MaxTokens {
			return nil, invalid(field, "%d is outside 0..%d", part.tokens, int64(MaxTokens))
		}
		if part.tokens == 0 {
			continue
		}
		if part.price == nil {
			e := precondition(ReasonPriceMissing, "model/"+m.GetId(),
				"model %q has no %s price in the registry; %d %s tokens cannot be priced", m.GetId(), part.name, part.tokens, part.name)
			e.Metadata = map[string]string{"model_id": m.GetId(), "component": part.name}
			return nil, e
		}
		nanos, ok := perMillion(part.tokens, *part.price)
		if !ok || nanos > math.MaxInt64-c.TotalNanos {
			return nil, invalid(field, "%d tokens at %d nano-USD per million cost more than %d nano-USD", part.tokens, *part.price, int64(math.MaxInt64))
		}
		*part.out = nanos
		c.TotalNanos += nanos
	}
	return c, nil
}

// ValidateEstimate checks a route's token estimate against MaxTokens, so
// a candidate is never excluded for a price an absurd estimate broke.
func ValidateEstimate(input, output int64) error {
	for _, f := range []struct {
		name   string
		tokens int64
	}{{"route.estimated_input_tokens", input}, {"route.estimated_output_tokens", output}} {
		if f.tokens < 0 || f.tokens > MaxTokens {
			return invalid(f.name, "%d is outside 0..%d", f.tokens, int64(MaxTokens))
		}
	}
	return nil
}

// perMillion is floor(tokens*price/1e6), exact in 128 bits; ok is false
// when an operand is negative or the result does not fit an int64.
func perMillion(tokens, price int64) (int64, bool) {
	if tokens < 0 || price < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(tokens), uint64(price))
	if hi >= 1_000_000 {
		return 0, false // the quotient needs more than 64 bits
	}
	q, _ := bits.Div64(hi, lo, 1_000_000)
	if q > math.MaxInt64 {
		return 0, false
	}
	return int64(q), true
}

// TotalTokens counts every token of a usage (quota and rate limit unit).
func TotalTokens(u *eventsv1.TokenUsage) int64 {
	return u.GetInputTokens() + u.GetOutputTokens() + u.GetCachedInputTokens() + u.GetReasoningTokens()
}

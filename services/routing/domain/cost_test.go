package domain

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func i64(v int64) *int64 { return &v }

func TestPerMillionIsExactFloor(t *testing.T) {
	for _, c := range []struct {
		tokens, price, want int64
		ok                  bool
	}{
		{0, 5, 0, true},
		{1, 999_999, 0, true}, // 0.999999 nano-USD rounds down
		{1, 1_000_000, 1, true},
		{1_500_000, 3, 4, true},             // 4.5 rounds down
		{999_999, 1_000_001, 999_999, true}, // 999999.999999 rounds down
		{MaxTokens, 1_250_000_000, 1_250_000_000_000_000, true},
		// tokens*price is 5e24 (overflows int64) but the result fits.
		{5_000_000_000_000, 1_000_000_000_000, 5_000_000_000_000_000_000, true},
		// (tokens % 1e6) * price alone overflows int64 here.
		{999_999, 10_000_000_000_000_000, 9_999_990_000_000_000, true},
		{math.MaxInt64, 1_000_000, math.MaxInt64, true},
		{math.MaxInt64, 1_000_001, 0, false},
		{-1, 5, 0, false},
		{5, -1, 0, false},
	} {
		got, ok := perMillion(c.tokens, c.price)
		if got != c.want || ok != c.ok {
			t.Errorf("perMillion(%d, %d) = %d, %v; want %d, %v", c.tokens, c.price, got, ok, c.want, c.ok)
		}
	}
}

func TestPerMillionMatchesBigArithmetic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	million := big.NewInt(1_000_000)
	for range 20000 {
		tokens, price := r.Int64N(MaxTokens+1), r.Int64N(1<<r.IntN(63))
		want := new(big.Int).Mul(big.NewInt(tokens), big.NewInt(price))
		want.Quo(want, million)
		got, ok := perMillion(tokens, price)
		if fits := want.IsInt64(); ok != fits || (fits && got != want.Int64()) {
			t.Fatalf("perMillion(%d, %d) = %d, %v; want %v (fits %v)", tokens, price, got, ok, want, fits)
		}
	}
}

func TestPrice(t *testing.T) {
	full := &eventsv1.ModelPrices{InputNanosPerMillion: i64(1_250_000_000), OutputNanosPerMillion: i64(10_000_000_000),
		CachedInputNanosPerMillion: i64(125_000_000), ReasoningNanosPerMillion: i64(10_000_000_000)}
	for _, c := range []struct {
		name      string
		prices    *eventsv1.ModelPrices
		usage     *eventsv1.TokenUsage
		want      *eventsv1.CostBreakdown
		reason    string // fault.KindPrecondition reason
		field     string // fault.KindInvalid field
		component string
	}{
		{name: "every component", prices: full,
			usage: &eventsv1.TokenUsage{InputTokens: 1000, OutputTokens: 100, CachedInputTokens: 4000, ReasoningTokens: 7},
			want:  &eventsv1.CostBreakdown{InputNanos: 1_250_000, OutputNanos: 1_000_000, CachedInputNanos: 500_000, ReasoningNanos: 70_000, TotalNanos: 2_820_000}},
		{name: "rounding per component then summed", prices: &eventsv1.ModelPrices{InputNanosPerMillion: i64(1), OutputNanosPerMillion: i64(1)},
			usage: &eventsv1.TokenUsage{InputTokens: 999_999, OutputTokens: 999_999},
			want:  &eventsv1.CostBreakdown{}},
		{name: "a free price is free, not missing", prices: &eventsv1.ModelPrices{InputNanosPerMillion: i64(0)},
			usage: &eventsv1.TokenUsage{InputTokens: 10}, want: &eventsv1.CostBreakdown{}},
		{name: "no tokens needs no price", prices: nil, usage: &eventsv1.TokenUsage{}, want: &eventsv1.CostBreakdown{}},
		{name: "unused component needs no price", prices: &eventsv1.ModelPrices{InputNanosPerMillion: i64(2_000_000)},
			usage: &eventsv1.TokenUsage{InputTokens: 3}, want: &eventsv1.CostBreakdown{InputNanos: 6, TotalNanos: 6}},
		{name: "input price missing", prices: &eventsv1.ModelPrices{OutputNanosPerMillion: i64(1)},
			usage: &eventsv1.TokenUsage{InputTokens: 1}, reason: ReasonPriceMissing, component: "input"},
		{name: "output price missing", prices: &eventsv1.ModelPrices{InputNanosPerMillion: i64(1)},
			usage: &eventsv1.TokenUsage{InputTokens: 1, OutputTokens: 1}, reason: ReasonPriceMissing, component: "output"},
		{name: "cached price missing", prices: &eventsv1.ModelPrices{InputNanosPerMillion: i64(1), OutputNanosPerMillion: i64(1)},
			usage: &eventsv1.TokenUsage{CachedInputTokens: 1}, reason: ReasonPriceMissing, component: "cached_input"},
		{name: "reasoning price missing", prices: &eventsv1.ModelPrices{InputNanosPerMillion: i64(1), OutputNanosPerMillion: i64(1), CachedInputNanosPerMillion: i64(1)},
			usage: &eventsv1.TokenUsage{ReasoningTokens: 1}, reason: ReasonPriceMissing, component: "reasoning"},
		{name: "no prices at all", prices: nil, usage: &eventsv1.TokenUsage{OutputTokens: 1}, reason: ReasonPriceMissing, component: "output"},
		{name: "negative tokens", prices: full, usage: &eventsv1.TokenUsage{CachedInputTokens: -1}, field: "usage.cached_input_tokens"},
		{name: "tokens above the bound", prices: full, usage: &eventsv1.TokenUsage{ReasoningTokens: MaxTokens + 1}, field: "usage.reasoning_tokens"},
		{name: "a component's cost overflows", prices: &eventsv1.ModelPrices{InputNanosPerMillion: i64(math.MaxInt64)},
			usage: &eventsv1.TokenUsage{InputTokens: 2_000_000}, field: "usage.input_tokens"},
		{name: "the total overflows", prices: &eventsv1.ModelPrices{InputNanosPerMillion: i64(math.MaxInt64), OutputNanosPerMillion: i64(math.MaxInt64)},
			usage: &eventsv1.TokenUsage{InputTokens: 1_000_000, OutputTokens: 1_000_000}, field: "usage.output_tokens"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Price(&eventsv1.Model{Id: "m", Prices: c.prices}, c.usage)
			var de *fault.Error
			switch {
			case c.reason != "":
				if !errors.As(err, &de) || de.Kind != fault.KindPrecondition || de.Reason != c.reason || de.Metadata["component"] != c.component || de.Metadata["model_id"] != "m" {
					t.Fatalf("got %v, %v; want %s for %s", got, err, c.reason, c.component)
				}
			case c.field != "":
				if !errors.As(err, &de) || de.Kind != fault.KindInvalid || de.Field() != c.field {
					t.Fatalf("got %v, %v; want invalid %s", got, err, c.field)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != c.want.String() {
					t.Fatalf("cost %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestValidateEstimate(t *testing.T) {
	for _, c := range []struct {
		in, out int64
		field   string
	}{
		{0, 0, ""},
		{MaxTokens, MaxTokens, ""},
		{MaxTokens + 1, 0, "route.estimated_input_tokens"},
		{0, -1, "route.estimated_output_tokens"},
	} {
		err := ValidateEstimate(c.in, c.out)
		var de *fault.Error
		if (c.field == "") != (err == nil) || (err != nil && (!errors.As(err, &de) || de.Field() != c.field)) {
			t.Errorf("ValidateEstimate(%d, %d) = %v, want field %q", c.in, c.out, err, c.field)
		}
	}
}

func TestTotalTokens(t *testing.T) {
	if got := TotalTokens(&eventsv1.TokenUsage{InputTokens: 1, OutputTokens: 20, CachedInputTokens: 300, ReasoningTokens: 4000}); got != 4321 {
		t.Fatalf("TotalTokens = %d", got)
	}
	if got := TotalTokens(nil); got != 0 {
		t.Fatalf("TotalTokens(nil) = %d", got)
	}
}

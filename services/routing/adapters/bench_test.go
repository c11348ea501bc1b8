package adapters_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
	"github.com/agentruntime/agentruntime/services/routing/adapters"
	"github.com/agentruntime/agentruntime/services/routing/domain"
)

// BenchmarkLimitCheck measures a limit check of a typical call (three rate
// buckets and two quota windows, one EVALSHA) next to the raw round trip of
// a trivial script in the same run; compare their ns/op for the ratio.
func BenchmarkLimitCheck(b *testing.B) {
	client := redistest.Client(b)
	store := adapters.NewRedis(client)
	ctx := context.Background()
	req := domain.LimitRequest{Mode: domain.Consume,
		Rates: []domain.RateItem{
			{Key: "rl:tenant:requests", Rate: 1 << 40, Period: time.Minute, Cost: 1},
			{Key: "rl:model:requests", Rate: 1 << 40, Period: time.Minute, Cost: 1},
			{Key: "rl:model:tokens", Rate: 1 << 50, Period: time.Minute, Cost: 1000},
		},
		Quotas: []domain.QuotaItem{
			{Key: "q:daily:tokens:bench", Limit: 1 << 60, Window: time.Hour},
			{Key: "q:daily:cost:bench", Limit: 1 << 60, Window: time.Hour},
		}}
	b.Run("raw_evalsha", func(b *testing.B) {
		for b.Loop() {
			if err := store.Ping(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("consume_limits", func(b *testing.B) {
		for b.Loop() {
			if _, err := store.Apply(ctx, "bench", req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("memory_consume_limits", func(b *testing.B) {
		m := adapters.NewMemory()
		for b.Loop() {
			if _, err := m.Apply(ctx, "bench", req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

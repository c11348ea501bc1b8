// Package limitertest is the contract every routing limit store passes: the
// in-process one and Redis run the same suite.
package limitertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/services/routing/domain"
)

// Store is the limit store under test.
type Store interface {
	Apply(ctx context.Context, tenant string, req domain.LimitRequest) (domain.LimitResult, error)
}

// Run runs the contract against stores made by newStore. Each subtest uses
// its own tenant, so stores may be shared.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	ctx := context.Background()
	var n atomic.Int64
	tenant := func() string { return fmt.Sprintf("t%d_%d", time.Now().UnixNano(), n.Add(1)) }
	// An hour-long period makes one unit take three minutes to come back, so
	// nothing regenerates while a test runs, however slow the machine.
	hourly := func(key string, rate, cost int64) domain.RateItem {
		return domain.RateItem{Key: key, Rate: rate, Period: time.Hour, Cost: cost}
	}
	daily := func(key string, limit, cost int64) domain.QuotaItem {
		return domain.QuotaItem{Key: key, Limit: limit, Cost: cost, Window: 24 * time.Hour}
	}

	t.Run("rate bucket allows its burst then refuses with a retry-after", func(t *testing.T) {
		s, tn := newStore(t), tenant()
		for i := range 5 {
			res, err := s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Consume, Rates: []domain.RateItem{hourly("rl", 5, 1)}})
			if err != nil || !res.Allowed || res.Rates[0].Remaining != int64(4-i) {
				t.Fatalf("request %d: %+v, %v; want allowed with %d remaining", i, res, err, 4-i)
			}
		}
		res, err := s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Consume, Rates: []domain.RateItem{hourly("rl", 5, 1)}})
		if err != nil || res.Allowed || res.Rates[0].Allowed {
			t.Fatalf("6th request: %+v, %v; want refused", res, err)
		}
		// One unit comes back after period/rate = 12 minutes.
		if ra := res.Rates[0].RetryAfter; ra < 11*time.Minute || ra > 12*time.Minute {
			t.Fatalf("retry after %v, want about 12m", ra)
		}
	})

	t.Run("check changes nothing", func(t *testing.T) {
		s, tn := newStore(t), tenant()
		for range 3 {
			res, err := s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Check,
				Rates: []domain.RateItem{hourly("rl", 1, 1)}, Quotas: []domain.QuotaItem{daily("q", 10, 10)}})
			if err != nil || !res.Allowed || res.Quotas[0].After != 0 {
				t.Fatalf("check: %+v, %v", res, err)
			}
		}
	})

	t.Run("consume is all or nothing across items", func(t *testing.T) {
		s, tn := newStore(t), tenant()
		// The narrow bucket (1) refuses the second request; the wide one
		// (10) must not have paid for it.
		req := domain.LimitRequest{Mode: domain.Consume, Rates: []domain.RateItem{hourly("wide", 10, 1), hourly("narrow", 1, 1)}}
		if res, err := s.Apply(ctx, tn, req); err != nil || !res.Allowed {
			t.Fatalf("first: %+v, %v", res, err)
		}
		res, err := s.Apply(ctx, tn, req)
		if err != nil || res.Allowed || !res.Rates[0].Allowed || res.Rates[1].Allowed {
			t.Fatalf("second: %+v, %v; want refused by the narrow bucket only", res, err)
		}
		res, err = s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Check, Rates: []domain.RateItem{hourly("wide", 10, 1)}})
		if err != nil || res.Rates[0].Remaining != 8 {
			t.Fatalf("wide bucket: %+v, %v; want 8 remaining after one request (the refused one paid nothing)", res, err)
		}
	})

	t.Run("a quota refusal consumes no rate", func(t *testing.T) {
		s, tn := newStore(t), tenant()
		req := domain.LimitRequest{Mode: domain.Consume, Rates: []domain.RateItem{hourly("rl", 10, 1)}, Quotas: []domain.QuotaItem{daily("q", 5, 6)}}
		res, err := s.Apply(ctx, tn, req)
		if err != nil || res.Allowed || res.Quotas[0].Allowed || res.Quotas[0].After != 0 {
			t.Fatalf("%+v, %v; want refused by the quota", res, err)
		}
		res, _ = s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Check, Rates: []domain.RateItem{hourly("rl", 10, 1)}})
		if res.Rates[0].Remaining != 9 {
			t.Fatalf("rate remaining %d, want 9 (untouched)", res.Rates[0].Remaining)
		}
	})

	t.Run("charge counts past the limit and reports before and after", func(t *testing.T) {
		s, tn := newStore(t), tenant()
		res, err := s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Charge, Quotas: []domain.QuotaItem{daily("q", 10, 7)}})
		if err != nil || !res.Allowed || res.Quotas[0].Before != 0 || res.Quotas[0].After != 7 {
			t.Fatalf("first charge: %+v, %v", res, err)
		}
		res, err = s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Charge, Quotas: []domain.QuotaItem{daily("q", 10, 7)}})
		if err != nil || res.Allowed || res.Quotas[0].Before != 7 || res.Quotas[0].After != 14 {
			t.Fatalf("second charge: %+v, %v; want 7 -> 14, not allowed", res, err)
		}
		res, err = s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Check, Quotas: []domain.QuotaItem{daily("q", 10, 0)}})
		if err != nil || res.Allowed || res.Quotas[0].After != 14 {
			t.Fatalf("check of an exhausted quota: %+v, %v", res, err)
		}
	})

	t.Run("a retried charge counts once", func(t *testing.T) {
		s, tn := newStore(t), tenant()
		req := domain.LimitRequest{Mode: domain.Charge, IdempotencyKey: "usage-1", Quotas: []domain.QuotaItem{daily("q", 100, 7)}}
		if res, err := s.Apply(ctx, tn, req); err != nil || res.Duplicate || res.Quotas[0].After != 7 {
			t.Fatalf("first: %+v, %v", res, err)
		}
		res, err := s.Apply(ctx, tn, req)
		if err != nil || !res.Duplicate || res.Quotas[0].After != 7 {
			t.Fatalf("retry: %+v, %v; want a duplicate at 7", res, err)
		}
	})

	t.Run("tenants do not share counters", func(t *testing.T) {
		s, a, b := newStore(t), tenant(), tenant()
		req := domain.LimitRequest{Mode: domain.Consume, Rates: []domain.RateItem{hourly("rl", 1, 1)}}
		if res, _ := s.Apply(ctx, a, req); !res.Allowed {
			t.Fatal("tenant a refused")
		}
		if res, _ := s.Apply(ctx, b, req); !res.Allowed {
			t.Fatal("tenant b refused: it shares tenant a's bucket")
		}
	})

	t.Run("50 goroutines never exceed a limit and the counts add up", func(t *testing.T) {
		s, tn := newStore(t), tenant()
		const workers, rate, quota, cost = 50, 20, 100, 7
		var allowedRate, refusedRate, allowedQuota, refusedQuota atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 2*workers)
		for range workers {
			wg.Go(func() {
				res, err := s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Consume, Rates: []domain.RateItem{hourly("rl", rate, 1)}})
				if err != nil {
					errs <- err
					return
				}
				if res.Allowed {
					allowedRate.Add(1)
				} else {
					refusedRate.Add(1)
				}
				res, err = s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Consume, Quotas: []domain.QuotaItem{daily("q", quota, cost)}})
				if err != nil {
					errs <- err
					return
				}
				if res.Allowed {
					allowedQuota.Add(1)
				} else {
					refusedQuota.Add(1)
				}
				if _, err := s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Charge, Quotas: []domain.QuotaItem{daily("charged", 0, cost)}}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if allowedRate.Load() != rate || refusedRate.Load() != workers-rate {
			t.Fatalf("rate: %d allowed, %d refused; want %d and %d", allowedRate.Load(), refusedRate.Load(), rate, workers-rate)
		}
		if allowedQuota.Load() != quota/cost || refusedQuota.Load() != workers-quota/cost {
			t.Fatalf("quota: %d allowed, %d refused; want %d and %d", allowedQuota.Load(), refusedQuota.Load(), quota/cost, workers-quota/cost)
		}
		res, err := s.Apply(ctx, tn, domain.LimitRequest{Mode: domain.Check,
			Rates:  []domain.RateItem{hourly("rl", rate, 1)},
			Quotas: []domain.QuotaItem{daily("q", quota, 0), daily("charged", 0, 0)}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rates[0].Remaining != 0 || res.Quotas[0].After != quota/cost*cost || res.Quotas[1].After != workers*cost {
			t.Fatalf("final state %+v; want 0 rate remaining, quota used %d, charged %d", res, quota/cost*cost, workers*cost)
		}
	})
}

// Package adapters holds the routing service's limit store: the counters
// behind rate limits and quotas, in Redis for deployments (atomic across
// replicas, one round trip per evaluation) and in process for dev mode.
// Both implement the same contract (limitertest) and the same arithmetic:
//
//   - Rate limits are GCRA (generic cell rate algorithm): a bucket keeps its
//     theoretical arrival time (TAT); a cost c is allowed at time now when
//     TAT + c*interval - period <= now. It smooths like a token bucket with
//     a burst of one period's worth, needs one number per bucket, and gives
//     an exact retry-after.
//   - Quotas are fixed windows (one UTC day): a counter per window that
//     expires with it.
//   - An evaluation covers several buckets and windows and is all or
//     nothing: a request refused by its model's limit consumes nothing from
//     the tenant's. This is why the Redis side is one script rather than
//     go-redis/redis_rate, which evaluates (and consumes) one key per call.
package adapters

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/agentruntime/agentruntime/services/routing/domain"
)

// KeyPrefix starts every Redis key of the limit store.
const KeyPrefix = "agentruntime:routing:"

// idempotencyWindow is how long a charge's idempotency key is remembered:
// longer than any quota window, so a retried charge never counts twice
// within the window it belongs to.
const idempotencyWindow = 48 * time.Hour

// gcra evaluates one rate bucket at now (microseconds): whether cost is
// allowed given the bucket's TAT, the new TAT if applied, what remains and
// when to retry. Memory and Redis share this arithmetic (the Lua script is a
// transcription of it).
func gcra(tat, now float64, it domain.RateItem) (allowed bool, newTAT float64, remaining int64, retryUS float64) {
	if it.Rate <= 0 || it.Period <= 0 {
		return true, tat, math.MaxInt64, 0
	}
	period := float64(it.Period.Microseconds())
	interval := period / float64(it.Rate)
	if tat < now {
		tat = now
	}
	newTAT = tat + interval*float64(it.Cost)
	allowAt := newTAT - period
	if it.Cost > 0 && allowAt > now {
		return false, tat, int64(math.Floor((now + period - tat) / interval)), allowAt - now
	}
	return true, newTAT, int64(math.Floor((now + period - newTAT) / interval)), 0
}

func quotaAllows(used int64, it domain.QuotaItem) bool {
	if it.Limit <= 0 {
		return true
	}
	if it.Cost == 0 {
		return used < it.Limit
	}
	return used+it.Cost <= it.Limit
}

// Memory is the in-process limit store for dev mode: one mutex makes every
// evaluation atomic, as the script does in Redis.
type Memory struct {
	mu      sync.Mutex
	now     func() time.Time
	rates   map[string]memRate
	quotas  map[string]memQuota
	charged map[string]time.Time
	applies int
}

type memRate struct {
	tat     float64
	expires time.Time
}

type memQuota struct {
	used    int64
	expires time.Time
}

// NewMemory returns an empty in-process store on the wall clock.
func NewMemory() *Memory { return NewMemoryAt(time.Now) }

// NewMemoryAt returns an in-process store on the given clock (tests).
func NewMemoryAt(now func() time.Time) *Memory {
	return &Memory{now: now, rates: map[string]memRate{}, quotas: map[string]memQuota{}, charged: map[string]time.Time{}}
}

// Apply implements the limit store contract.
func (m *Memory) Apply(_ context.Context, tenant string, req domain.LimitRequest) (domain.LimitResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.now()
	now := float64(t.UnixMicro())
	if m.applies++; m.applies%4096 == 0 {
		m.sweep(t)
	}
	res := domain.LimitResult{Allowed: true, Rates: make([]domain.RateResult, len(req.Rates)), Quotas: make([]domain.QuotaResult, len(req.Quotas))}

	if req.Mode == domain.Charge && req.IdempotencyKey != "" {
		k := tenant + "\x00" + req.IdempotencyKey
		if exp, ok := m.charged[k]; ok && t.Before(exp) {
			res.Duplicate = true
			for i, q := range req.Quotas {
				used := m.quota(tenant, q.Key, t)
				res.Quotas[i] = domain.QuotaResult{Allowed: q.Limit <= 0 || used <= q.Limit, Before: used, After: used}
			}
			for i := range res.Rates {
				res.Rates[i] = domain.RateResult{Allowed: true, Remaining: math.MaxInt64}
			}
			return res, nil
		}
		m.charged[k] = t.Add(idempotencyWindow)
	}

	newTATs := make([]float64, len(req.Rates))
	if req.Mode == domain.Charge {
		for i := range res.Rates {
			res.Rates[i] = domain.RateResult{Allowed: true, Remaining: math.MaxInt64}
		}
	} else {
		for i, it := range req.Rates {
			tat := now
			if r, ok := m.rates[tenant+"\x00"+it.Key]; ok && t.Before(r.expires) {
				tat = r.tat
			}
			ok, nt, rem, retry := gcra(tat, now, it)
			newTATs[i] = nt
			res.Rates[i] = domain.RateResult{Allowed: ok, Remaining: rem, RetryAfter: time.Duration(math.Ceil(retry)) * time.Microsecond}
			res.Allowed = res.Allowed && ok
		}
	}
	for i, it := range req.Quotas {
		used := m.quota(tenant, it.Key, t)
		ok := quotaAllows(used, it)
		if req.Mode == domain.Charge {
			ok = it.Limit <= 0 || used+it.Cost <= it.Limit
		}
		res.Quotas[i] = domain.QuotaResult{Allowed: ok, Before: used, After: used}
		res.Allowed = res.Allowed && ok
	}

	apply := req.Mode == domain.Charge || (req.Mode == domain.Consume && res.Allowed)
	if !apply {
		return res, nil
	}
	for i, it := range req.Rates {
		if req.Mode == domain.Charge || it.Cost == 0 || it.Rate <= 0 {
			continue
		}
		m.rates[tenant+"\x00"+it.Key] = memRate{tat: newTATs[i], expires: t.Add(time.Duration(newTATs[i]-now) * time.Microsecond)}
	}
	for i, it := range req.Quotas {
		if it.Cost == 0 {
			continue
		}
		k := tenant + "\x00" + it.Key
		q := m.quotas[k]
		if !t.Before(q.expires) {
			q = memQuota{expires: t.Add(it.Window)}
		}
		q.used += it.Cost
		m.quotas[k] = q
		res.Quotas[i].After = q.used
	}
	return res, nil
}

func (m *Memory) quota(tenant, key string, t time.Time) int64 {
	if q, ok := m.quotas[tenant+"\x00"+key]; ok && t.Before(q.expires) {
		return q.used
	}
	return 0
}

// sweep drops expired buckets, windows and idempotency keys, so a
// long-running dev process does not keep every day it has seen.
func (m *Memory) sweep(t time.Time) {
	for k, r := range m.rates {
		if !t.Before(r.expires) {
			delete(m.rates, k)
		}
	}
	for k, q := range m.quotas {
		if !t.Before(q.expires) {
			delete(m.quotas, k)
		}
	}
	for k, exp := range m.charged {
		if !t.Before(exp) {
			delete(m.charged, k)
		}
	}
}

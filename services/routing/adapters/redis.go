package adapters

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentruntime/agentruntime/services/routing/domain"
)

// limitScript evaluates rate buckets (GCRA) and quota windows of one tenant
// atomically and applies them all or none: the Lua transcription of gcra
// and quotaAllows. Redis's own clock (TIME) is the clock, so replicas with
// skewed clocks agree.
//
// KEYS: [idempotency key], rate keys..., quota keys...
// ARGV: mode, nrates, nquotas, has_idem, idem_ttl_ms,
//
//	then per rate: rate, period_us, cost; per quota: limit, cost, window_ms
//
// Returns: allowed, duplicate, then per rate: allowed, remaining, retry_us;
// per quota: allowed, before, after.
var limitScript = redis.NewScript(`
local mode = tonumber(ARGV[1])
local nr = tonumber(ARGV[2])
local nq = tonumber(ARGV[3])
local has_idem = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local k0 = has_idem
local a = 6
local out = {1, 0}

local function quota_allows(used, limit, cost)
  if limit <= 0 then return true end
  if cost == 0 then return used < limit end
  return used + cost <= limit
end

if mode == 2 and has_idem == 1 then
  if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[5]) then
    -- a retried charge: report the windows as they are, change nothing
    out[2] = 1
    for i = 1, nr do
      table.insert(out, 1)
      table.insert(out, -1)
      table.insert(out, 0)
    end
    for i = 1, nq do
      local b = a + 3 * nr + 3 * (i - 1)
      local limit = tonumber(ARGV[b])
      local used = tonumber(redis.call('GET', KEYS[k0 + nr + i]) or '0')
      local ok = 1
      if limit > 0 and used > limit then ok = 0 end
      table.insert(out, ok)
      table.insert(out, used)
      table.insert(out, used)
    end
    return out
  end
end

local rates = {}
for i = 1, nr do
  local b = a + 3 * (i - 1)
  local rate = tonumber(ARGV[b])
  local period = tonumber(ARGV[b + 1])
  local cost = tonumber(ARGV[b + 2])
  local ok, new_tat, remaining, retry = 1, 0, 0, 0
  if mode ~= 2 and rate > 0 and period > 0 then
    local interval = period / rate
    local tat = tonumber(redis.call('GET', KEYS[k0 + i]) or '0')
    if tat < now then tat = now end
    new_tat = tat + interval * cost
    local allow_at = new_tat - period
    if cost > 0 and allow_at > now then
      ok = 0
      remaining = math.floor((now + period - tat) / interval)
      retry = math.ceil(allow_at - now)
      out[1] = 0
    else
      remaining = math.floor((now + period - new_tat) / interval)
    end
  else
    remaining = -1
  end
  rates[i] = {ok, new_tat, cost, rate}
  table.insert(out, ok)
  table.insert(out, remaining)
  table.insert(out, retry)
end

local quotas = {}
for i = 1, nq do
  local b = a + 3 * nr + 3 * (i - 1)
  local limit = tonumber(ARGV[b])
  local cost = tonumber(ARGV[b + 1])
  local used = tonumber(redis.call('GET', KEYS[k0 + nr + i]) or '0')
  local ok = quota_allows(used, limit, cost)
  if mode == 2 then ok = limit <= 0 or used + cost <= limit end
  if not ok then out[1] = 0 end
  quotas[i] = {used, cost, ARGV[b + 2]}
  table.insert(out, ok and 1 or 0)
  table.insert(out, used)
  table.insert(out, used)
end

if mode == 2 or (mode == 1 and out[1] == 1) then
  if mode == 1 then
    for i = 1, nr do
      local r = rates[i]
      if r[3] > 0 and r[4] > 0 then
        local ttl = math.ceil((r[2] - now) / 1000)
        if ttl < 1 then ttl = 1 end
        redis.call('SET', KEYS[k0 + i], string.format('%.3f', r[2]), 'PX', ttl)
      end
    end
  end
  for i = 1, nq do
    local q = quotas[i]
    if q[2] ~= 0 then
      local k = KEYS[k0 + nr + i]
      local after = redis.call('INCRBY', k, q[2])
      if after == q[2] then redis.call('PEXPIRE', k, q[3]) end
      out[2 + 3 * nr + 3 * (i - 1) + 3] = after
    end
  end
end
return out
`)

// Redis is the limit store of a deployment: one script call (EVALSHA) per
// evaluation. Keys are "agentruntime:routing:{<tenant>}:...": the hash tag
// keeps a tenant's keys in one cluster slot, which a multi-key script needs.
type Redis struct {
	client redis.Scripter
}

// NewRedis returns the store on a client.
func NewRedis(client redis.Scripter) *Redis { return &Redis{client: client} }

func tenantKey(tenant, key string) string { return KeyPrefix + "{" + tenant + "}:" + key }

// Apply implements the limit store contract.
func (r *Redis) Apply(ctx context.Context, tenant string, req domain.LimitRequest) (domain.LimitResult, error) {
	hasIdem := req.Mode == domain.Charge && req.IdempotencyKey != ""
	keys := make([]string, 0, 1+len(req.Rates)+len(req.Quotas))
	args := make([]any, 0, 5+3*len(req.Rates)+3*len(req.Quotas))
	idem := 0
	if hasIdem {
		keys = append(keys, tenantKey(tenant, "charged:"+req.IdempotencyKey))
		idem = 1
	}
	args = append(args, int(req.Mode), len(req.Rates), len(req.Quotas), idem, idempotencyWindow.Milliseconds())
	for _, it := range req.Rates {
		keys = append(keys, tenantKey(tenant, it.Key))
		args = append(args, it.Rate, it.Period.Microseconds(), it.Cost)
	}
	for _, it := range req.Quotas {
		keys = append(keys, tenantKey(tenant, it.Key))
		args = append(args, it.Limit, it.Cost, it.Window.Milliseconds())
	}
	raw, err := limitScript.Run(ctx, r.client, keys, args...).Int64Slice()
	if err != nil {
		return domain.LimitResult{}, fmt.Errorf("routing limits: redis: %w", err)
	}
	want := 2 + 3*len(req.Rates) + 3*len(req.Quotas)
	if len(raw) != want {
		return domain.LimitResult{}, fmt.Errorf("routing limits: redis script answered %d values, want %d", len(raw), want)
	}
	res := domain.LimitResult{Allowed: raw[0] == 1, Duplicate: raw[1] == 1,
		Rates: make([]domain.RateResult, len(req.Rates)), Quotas: make([]domain.QuotaResult, len(req.Quotas))}
	for i := range req.Rates {
		v := raw[2+3*i:]
		rem := v[1]
		if rem < 0 {
			rem = int64(^uint64(0) >> 1)
		}
		res.Rates[i] = domain.RateResult{Allowed: v[0] == 1, Remaining: rem, RetryAfter: time.Duration(v[2]) * time.Microsecond}
	}
	for i := range req.Quotas {
		v := raw[2+3*len(req.Rates)+3*i:]
		res.Quotas[i] = domain.QuotaResult{Allowed: v[0] == 1, Before: v[1], After: v[2]}
	}
	return res, nil
}

// Ping runs a trivial script: the raw Redis round trip benchmarks compare
// against.
func (r *Redis) Ping(ctx context.Context) error {
	return pingScript.Run(ctx, r.client, []string{"agentruntime:routing:ping"}).Err()
}

var pingScript = redis.NewScript(`return 1`)

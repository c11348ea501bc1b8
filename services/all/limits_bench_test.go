package all_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/services/routing"
)

// limitsRegistry: tenant, provider and model rate limits and a daily
// quota, far from exhausted, so every call evaluates them all.
const limitsRegistry = `
providers:
  - {id: openai, credential_status: present, regions: [us]}
models:
  - {id: gpt-5-4, provider: openai, capabilities: [tools], context_window: 400000, prices_usd_per_million: {input: 1.25, output: 10}, latency: standard}
rate_limits:
  - {id: tenant-rpm, requests_per_minute: 1000000000}
  - {id: openai-tpm, provider: openai, tokens_per_minute: 1000000000000}
  - {id: gpt-rpm, model: gpt-5-4, requests_per_minute: 1000000000}
quotas:
  - {id: daily, tokens_per_day: 1000000000000000, cost_usd_per_day: 1000000}
`

var pingScript = redis.NewScript(`return 1`)

// BenchmarkLimits: CheckLimits and ConsumeLimits through routing's gRPC API
// in the serve shape (limits and read model in Redis), with 1 and 8 calls
// in flight, next to a raw EVALSHA of a trivial script on the same Redis
// with as many in flight, in the same run; and the Redis commands each
// call costs.
func BenchmarkLimits(b *testing.B) {
	models := filepath.Join(b.TempDir(), "models.yaml")
	if err := os.WriteFile(models, []byte(limitsRegistry), 0o600); err != nil {
		b.Fatal(err)
	}
	s := newStackModels(b, serve, models, routing.Name)
	ctx := context.Background()
	c := rv1.NewRoutingServiceClient(s.conn(b, routing.Name))
	scope := &rv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: "turn1"}
	calls := map[string]func() error{
		"check": func() error {
			_, err := c.CheckLimits(ctx, &rv1.CheckLimitsRequest{ModelId: "gpt-5-4", Requests: 1, Tokens: 2500})
			return err
		},
		"consume": func() error {
			_, err := c.ConsumeLimits(ctx, &rv1.ConsumeLimitsRequest{Scope: scope, ModelId: "gpt-5-4", Tokens: 2500})
			return err
		},
	}
	raw := func() error { return pingScript.Run(ctx, s.redis, []string{"agentruntime:routing:ping"}).Err() }
	// Warm: the registry is imported and held, the scripts are loaded.
	for _, call := range calls {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	if err := raw(); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"check", "consume"} {
		for _, inflight := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/inflight%d", name, inflight), func(b *testing.B) {
				var opTook, rawTook time.Duration
				var lat []time.Duration
				var mu sync.Mutex
				// Interleaved in rounds, so the machine's noise hits both sides.
				const rounds = 10
				chunk := max(b.N/rounds, 1)
				run := func(fn func() error, record bool) time.Duration {
					per := max(chunk/inflight, 1)
					t0 := time.Now()
					var wg sync.WaitGroup
					for w := 0; w < inflight; w++ {
						wg.Go(func() {
							for i := 0; i < per; i++ {
								t := time.Now()
								if err := fn(); err != nil {
									b.Error(err)
									return
								}
								if record {
									d := time.Since(t)
									mu.Lock()
									lat = append(lat, d)
									mu.Unlock()
								}
							}
						})
					}
					wg.Wait()
					return time.Since(t0)
				}
				cost := s.count(b, 1, func(int) {
					for r := 0; r < rounds; r++ {
						opTook += run(calls[name], true)
						rawTook += run(raw, false)
					}
				})
				n := float64(max(chunk/inflight, 1) * inflight * rounds)
				// The raw side's EVALSHAs ran inside the count too: one each.
				cmds := cost.redis/n - 1
				evalsha := cost.redisBy["evalsha"]/n - 1
				rate, rawRate := n/opTook.Seconds(), n/rawTook.Seconds()
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(rate, "calls/s")
				b.ReportMetric(rawRate, "raw-evalsha/s")
				b.ReportMetric(rate/rawRate, "ratio")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(cmds, "redis-cmds/op")
				b.ReportMetric(evalsha, "redis-round-trips/op")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

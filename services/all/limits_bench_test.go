package all_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

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

// bareHealth is a raw block the services' calls stand on: a bare gRPC
// server (no interceptors, no stats handler) whose one method runs one
// raw operation (an EVALSHA, a JetStream publish).
type bareHealth struct {
	healthpb.UnimplementedHealthServer
	run func(context.Context) error
}

func (h bareHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if err := h.run(ctx); err != nil {
		return nil, err
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// bareGRPC serves bareHealth on loopback and answers a call of it.
func bareGRPC(b *testing.B, run func(context.Context) error) func() error {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, bareHealth{run: run})
	go func() { _ = srv.Serve(lis) }()
	b.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	hc := healthpb.NewHealthClient(conn)
	return func() error {
		_, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
		return err
	}
}

// BenchmarkLimits: CheckLimits and ConsumeLimits through routing's gRPC API
// in the serve shape (limits and read model in Redis), with 1 and 8 calls
// in flight, next to, in the same run with as many in flight, a raw
// EVALSHA of a trivial script on the same Redis and a bare gRPC call
// that runs that EVALSHA (the two round trips a limits call cannot do
// without: p50-ratio is the limits call's median latency over the bare
// one's); and the Redis commands each call costs.
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
	bare := bareGRPC(b, func(ctx context.Context) error {
		return pingScript.Run(ctx, s.redis, []string{"agentruntime:routing:ping"}).Err()
	})
	// Warm: the registry is imported and held, the scripts are loaded.
	for _, call := range calls {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	if err := raw(); err != nil {
		b.Fatal(err)
	}
	if err := bare(); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"check", "consume"} {
		for _, inflight := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/inflight%d", name, inflight), func(b *testing.B) {
				var opTook, rawTook, bareTook time.Duration
				var lat, bareLat []time.Duration
				var mu sync.Mutex
				// Interleaved in rounds, so the machine's noise hits both sides.
				const rounds = 10
				chunk := max(b.N/rounds, 1)
				run := func(fn func() error, record *[]time.Duration) time.Duration {
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
								if record != nil {
									d := time.Since(t)
									mu.Lock()
									*record = append(*record, d)
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
						opTook += run(calls[name], &lat)
						rawTook += run(raw, nil)
						bareTook += run(bare, &bareLat)
					}
				})
				n := float64(max(chunk/inflight, 1) * inflight * rounds)
				// The raw sides' EVALSHAs ran inside the count too: two each.
				cmds := cost.redis/n - 2
				evalsha := cost.redisBy["evalsha"]/n - 2
				rate, rawRate, bareRate := n/opTook.Seconds(), n/rawTook.Seconds(), n/bareTook.Seconds()
				p50, bareP50 := median(lat), median(bareLat)
				b.ReportMetric(rate, "calls/s")
				b.ReportMetric(rawRate, "raw-evalsha/s")
				b.ReportMetric(rate/rawRate, "ratio")
				b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
				b.ReportMetric(bareRate, "raw-grpc-evalsha/s")
				b.ReportMetric(float64(bareP50.Microseconds()), "raw-grpc-evalsha-p50-µs")
				b.ReportMetric(float64(p50)/float64(bareP50), "p50-ratio")
				b.ReportMetric(cmds, "redis-cmds/op")
				b.ReportMetric(evalsha, "redis-round-trips/op")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

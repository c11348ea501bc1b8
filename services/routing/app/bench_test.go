package app_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
	"github.com/agentruntime/agentruntime/services/routing/adapters"
	"github.com/agentruntime/agentruntime/services/routing/app"
	"github.com/agentruntime/agentruntime/services/routing/readmodel"
)

// benchRegistry is a small real registry: four models on three providers,
// tenant, provider and model rate limits and a daily quota, all far from
// exhausted so every decision does the full work.
const benchRegistry = `
providers:
  - {id: openai, credential_status: present, regions: [us]}
  - {id: anthropic, credential_status: present, regions: [us, eu]}
  - {id: local, credential_status: missing}
models:
  - {id: gpt-5-4, provider: openai, capabilities: [tools, vision], context_window: 400000, prices_usd_per_million: {input: 1.25, output: 10}, latency: standard}
  - {id: gpt-mini, provider: openai, capabilities: [tools], context_window: 128000, prices_usd_per_million: {input: 0.25, output: 2}, latency: fast}
  - {id: claude-fast, provider: anthropic, capabilities: [tools], context_window: 200000, prices_usd_per_million: {input: 0.8, output: 4}, latency: fast}
  - {id: llama, provider: local, capabilities: [tools], prices_usd_per_million: {input: 0, output: 0}}
rate_limits:
  - {id: tenant-rpm, requests_per_minute: 1000000000}
  - {id: openai-tpm, provider: openai, tokens_per_minute: 1000000000000}
  - {id: gpt-rpm, model: gpt-5-4, requests_per_minute: 1000000000}
quotas:
  - {id: daily, tokens_per_day: 1000000000000000, cost_usd_per_day: 1000000}
`

// BenchmarkRouting interleaves a use case with the raw building blocks it
// stands on, measured in the same loop on the same servers so the shared
// machine's noise hits every side alike (as pkg/eventlog's benchmarks do):
// a Redis EVALSHA of `return 1` and a JetStream publish of an envelope of
// the same size as the decision's events.
//
// A routing decision on a new turn is one read of the turn's subject (the
// writer's miss) and one append of its two events (an atomic batch) on
// JetStream plus one limit check (EVALSHA over every candidate's buckets)
// on Redis, around the pure domain. AR_BENCH_MEMORY=1 puts the stream in
// memory, where the batch is staged in memory as at R3 rather than in a
// file store of its own at R1 (docs/adr/0005-hot-path.md).
func BenchmarkRouting(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	nc := natstest.Connect(b, natstest.Server(b))
	cfg := eventlog.Config{}
	if os.Getenv("AR_BENCH_MEMORY") != "" {
		cfg.Storage = jetstream.MemoryStorage
	}
	log, err := eventlog.Open(ctx, nc, cfg)
	if err != nil {
		b.Fatal(err)
	}
	config, err := app.ParseConfig([]byte(benchRegistry))
	if err != nil {
		b.Fatal(err)
	}
	store := projection.NewMemory()
	limits := adapters.NewRedis(redistest.Client(b))
	a := app.New(log, store, limits, config)
	done := make(chan error, 1)
	go func() { done <- projector.Run(ctx, log, store, readmodel.Projection{Subjects: log.Subjects}, nil) }()
	b.Cleanup(func() { cancel(); <-done })
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	profile := &eventsv1.TaskProfile{Kind: "coding", RequiredCapabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS},
		LatencyTarget: eventsv1.LatencyClass_LATENCY_CLASS_STANDARD, FallbackPolicy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE}
	turns := 0
	// Each decision routes a new turn: the per-turn path, with no read
	// model catch-up to wait for.
	decide := func() *rv1.DecideRouteResponse {
		turns++
		resp, err := a.DecideRoute(ctx, "bench", &rv1.DecideRouteRequest{
			Scope: &rv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: fmt.Sprintf("turn%d", turns)},
			Route: &rv1.RouteRequest{Profile: profile, EstimatedInputTokens: 2000, EstimatedOutputTokens: 500}})
		if err != nil {
			b.Fatal(err)
		}
		return resp
	}
	// The first call imports the registry; a sample decision sizes the raw
	// publish.
	sample := decide()
	if sample.GetDecision() == nil || sample.GetCandidateSet().GetCandidateCount() != 3 {
		b.Fatalf("sample decision %v", sample)
	}
	raw := rawDecisionPayload(b, sample)
	rawSubject := log.Subjects.Prefix + ".bench.s1.raw.r1"

	type sides struct{ op, evalsha, publish time.Duration }
	report := func(b *testing.B, s sides, unit string) {
		n := float64(b.N)
		op, evalsha, publish := n/s.op.Seconds(), n/s.evalsha.Seconds(), n/s.publish.Seconds()
		b.ReportMetric(op, unit)
		b.ReportMetric(evalsha, "raw-evalsha/s")
		b.ReportMetric(publish, "raw-publish/s")
		b.ReportMetric(op/evalsha, "ratio-vs-evalsha")
		b.ReportMetric(op/publish, "ratio-vs-publish")
		b.ReportMetric(0, "ns/op") // the rates are the figures; ns/op mixes all sides
	}
	rawSides := func(s *sides) {
		t0 := time.Now()
		if err := limits.Ping(ctx); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := js.Publish(ctx, rawSubject, raw); err != nil {
			b.Fatal(err)
		}
		s.evalsha += t1.Sub(t0)
		s.publish += time.Since(t1)
	}

	b.Run("decide_route", func(b *testing.B) {
		var s sides
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			decide()
			s.op += time.Since(t0)
			rawSides(&s)
		}
		report(b, s, "decisions/s")
	})
	b.Run("check_limits", func(b *testing.B) {
		req := &rv1.CheckLimitsRequest{ModelId: "gpt-5-4", Requests: 1, Tokens: 2500}
		var s sides
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if _, err := a.CheckLimits(ctx, "bench", req); err != nil {
				b.Fatal(err)
			}
			s.op += time.Since(t0)
			rawSides(&s)
		}
		report(b, s, "checks/s")
	})
}

// rawDecisionPayload is the two events of a decision marshalled once, as
// one message: the raw side pays for no envelope or domain work.
func rawDecisionPayload(b *testing.B, sample *rv1.DecideRouteResponse) []byte {
	e := &eventsv1.RuntimeEvent{Type: "routing.decided", EventId: "evt_01JCX3Q8Z5V1T2N7R4W9K6M0PA", TenantId: "bench", SessionId: "s1",
		ThreadId: "th1", TurnId: "turn", Payload: &eventsv1.RuntimeEvent_RoutingDecided{RoutingDecided: &eventsv1.RoutingDecided{Decision: sample.GetDecision()}}}
	c := &eventsv1.RuntimeEvent{Type: "routing.candidates.resolved", EventId: "evt_01JCX3Q8Z5V1T2N7R4W9K6M0PB", TenantId: "bench", SessionId: "s1",
		ThreadId: "th1", TurnId: "turn", Payload: &eventsv1.RuntimeEvent_RoutingCandidatesResolved{RoutingCandidatesResolved: &eventsv1.RoutingCandidatesResolved{CandidateSet: sample.GetCandidateSet()}}}
	var out []byte
	for _, m := range []proto.Message{c, e} {
		data, err := proto.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data...)
	}
	return out
}

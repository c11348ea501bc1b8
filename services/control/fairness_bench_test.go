package control_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

// queued is one turn to submit: its session, thread and how it is claimed.
type queued struct {
	session, thread, key string
	priority             uint32
	weight               float32
}

// submitAll submits every turn (8 at a time) and waits until the claims
// projection has folded them all: claims then choose among all of them.
func (h *harness) submitAll(ctx context.Context, turns []queued) map[string]queued {
	h.t.Helper()
	byTurn := make(map[string]queued, len(turns))
	var mu sync.Mutex
	testkit.Parallel(8, turns, func(q queued) {
		req := &controlv1.SubmitTurnRequest{SessionId: q.session, ThreadId: q.thread, Input: text("work"), Priority: q.priority, FairnessKey: q.key}
		if q.weight != 0 {
			req.FairnessWeight = proto.Float32(q.weight)
		}
		resp, err := h.client.SubmitTurn(ctx, req)
		if err != nil {
			h.t.Errorf("SubmitTurn %s/%s: %v", q.session, q.thread, err)
			return
		}
		mu.Lock()
		byTurn[resp.Turn.TurnId] = q
		mu.Unlock()
	})
	if h.t.Failed() {
		h.t.FailNow()
	}
	h.waitFolded(ctx)
	return byTurn
}

// waitFolded waits until the claims projection has folded everything the
// log holds, in every partition.
func (h *harness) waitFolded(ctx context.Context) {
	h.t.Helper()
	for i, v := range h.log.Views() {
		head, err := v.Head(ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		if _, err := projector.WaitFor(ctx, v, h.store, readmodel.ClaimsName, head, time.Minute); err != nil {
			h.t.Fatalf("claims projection of partition %d short of %d: %v", i, head, err)
		}
	}
}

// claimAll claims n turns one after another, each followed by a bare gRPC
// round trip (health Check) on the same server through the same
// interceptors: the raw block a claim (one call) is measured beside,
// interleaved so both see the same machine. It answers the turns in claim
// order, claims per second and bare calls per second.
func claimAll(b *testing.B, h *harness, n int) (order []string, claims, raw float64) {
	cc, err := grpc.NewClient(h.listenAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	health := healthpb.NewHealthClient(cc)
	ctx := benchCtx(b)
	var claiming, calling time.Duration
	order = make([]string, 0, n)
	for range n {
		t0 := time.Now()
		// An hour's lease: no claim of the run lapses (and is claimed
		// again) before the run ends; nothing heartbeats.
		c, err := h.client.ClaimTurn(ctx, &controlv1.ClaimTurnRequest{WorkerId: "bench", LeaseTtl: durationpb.New(time.Hour)})
		if err != nil {
			b.Fatal(err)
		}
		if c.GetTurn() == nil {
			b.Fatalf("claim %d found nothing", len(order)+1)
		}
		order = append(order, c.GetTurn().GetTurnId())
		t1 := time.Now()
		if _, err := health.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			b.Fatal(err)
		}
		claiming, calling = claiming+t1.Sub(t0), calling+time.Since(t1)
	}
	return order, float64(n) / claiming.Seconds(), float64(n) / calling.Seconds()
}

// BenchmarkClaimTurn: one claim of a waiting turn (each on its own thread,
// so every one is claimable; queued outside the measured loop), beside a
// bare gRPC round trip on the same server. With the read model in process
// (dev) and in Redis (serve).
func BenchmarkClaimTurn(b *testing.B) {
	for _, memory := range []bool{true, false} {
		name := "redis"
		if memory {
			name = "memory"
		}
		b.Run(name, func(b *testing.B) {
			h := newHarnessOn(b, memory)
			turns := make([]queued, b.N)
			for i := range turns {
				turns[i] = queued{session: fmt.Sprintf("s%d", i%10), thread: fmt.Sprintf("th%d", i)}
			}
			h.submitAll(benchCtx(b), turns)
			b.ResetTimer()
			_, rate, raw := claimAll(b, h, b.N)
			b.StopTimer()
			b.ReportMetric(rate, "claims/s")
			b.ReportMetric(raw, "raw-grpc-calls/s")
			b.ReportMetric(rate/raw, "grpc-ratio")
		})
	}
}

// fairTurns is the size of BenchmarkFairness's noisy key
// (AR_BENCH_FAIR_TURNS, default 2,000: a run under a minute on a small
// machine; the figure of docs/performance.md also names 10,000).
func fairTurns(b *testing.B) int {
	if v, err := strconv.Atoi(os.Getenv("AR_BENCH_FAIR_TURNS")); err == nil && v > 0 {
		return v
	}
	return 2000
}

// BenchmarkFairness: claims under a noisy fairness key, in the dev shape.
//
//   - noisy: one key with AR_BENCH_FAIR_TURNS waiting turns, nine keys
//     with 10 each (submitted after the noisy ones). quiet-last is the
//     claim position of the last of the nine keys' 90 turns (round robin:
//     about 100), claims/s is the rate of claiming every turn, and
//     vs-one-key divides its grpc-ratio by the last one-key run's: the
//     same number of turns all on one key (arrival order).
//   - weights: three keys of weights 1, 2 and 4 with 300 turns each; Jain's
//     fairness index of the first 420 claims per key divided by the key's
//     weight (1: shares exactly as weighted).
//
// Each rate is beside bare gRPC round trips on the same server.
func BenchmarkFairness(b *testing.B) {
	n := fairTurns(b)
	// The same turns with and without a noisy key, each on a service of
	// its own (stopped before the next starts); one-key runs first and
	// noisy reports its rate against it.
	var oneKey float64
	b.Run("one-key", func(b *testing.B) {
		for b.Loop() {
			turns := make([]queued, n+90)
			for i := range turns {
				turns[i] = queued{session: fmt.Sprintf("one-%d", i%50), thread: fmt.Sprintf("o%d", i), key: "one"}
			}
			h := newHarnessOn(b, true)
			h.submitAll(benchCtx(b), turns)
			_, rate, raw := claimAll(b, h, len(turns))
			oneKey = rate / raw
			b.ReportMetric(rate, "claims/s")
			b.ReportMetric(raw, "raw-grpc-calls/s")
			b.ReportMetric(rate/raw, "grpc-ratio")
		}
	})
	b.Run("noisy", func(b *testing.B) {
		for b.Loop() {
			var turns []queued
			for i := range n {
				turns = append(turns, queued{session: fmt.Sprintf("noisy-%d", i%50), thread: fmt.Sprintf("n%d", i), key: "noisy"})
			}
			for k := range 9 {
				for i := range 10 {
					turns = append(turns, queued{session: fmt.Sprintf("quiet-%d", k), thread: fmt.Sprintf("q%d-%d", k, i)})
				}
			}
			h := newHarnessOn(b, true)
			byTurn := h.submitAll(benchCtx(b), turns)
			order, rate, raw := claimAll(b, h, len(turns))
			last, quiet := 0, 0
			for i, id := range order {
				if byTurn[id].key == "" {
					last, quiet = i+1, quiet+1
				}
			}
			if quiet != 90 {
				b.Fatalf("claimed %d of the quiet keys' 90 turns", quiet)
			}
			b.ReportMetric(float64(n), "noisy-turns")
			b.ReportMetric(float64(last), "quiet-last")
			b.ReportMetric(rate, "claims/s")
			b.ReportMetric(raw, "raw-grpc-calls/s")
			b.ReportMetric(rate/raw, "grpc-ratio")
			if oneKey > 0 {
				b.ReportMetric((rate/raw)/oneKey, "vs-one-key")
			}
		}
	})
	b.Run("weights", func(b *testing.B) {
		for b.Loop() {
			weights := []float32{1, 2, 4}
			var turns []queued
			for i := range 300 {
				for k, w := range weights {
					turns = append(turns, queued{session: fmt.Sprintf("w%d", k), thread: fmt.Sprintf("w%d-%d", k, i), key: fmt.Sprintf("w%d", k), weight: w})
				}
			}
			h := newHarnessOn(b, true)
			byTurn := h.submitAll(benchCtx(b), turns)
			order, _, _ := claimAll(b, h, 420) // the weight-4 key's share is 240 of its 300: every key stays busy
			got := map[string]float64{}
			for _, id := range order {
				got[byTurn[id].key]++
			}
			var sum, sq float64
			for k, w := range weights {
				y := got[fmt.Sprintf("w%d", k)] / float64(w)
				sum, sq = sum+y, sq+y*y
			}
			b.ReportMetric(sum*sum/(float64(len(weights))*sq), "jain")
			for k := range weights {
				b.ReportMetric(got[fmt.Sprintf("w%d", k)], fmt.Sprintf("claims-w%d", 1<<k))
			}
		}
	})
}

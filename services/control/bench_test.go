package control_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/control/app"
)

// The benchmarks measure the control service through gRPC on loopback,
// with the in-process read model (dev mode), next to the raw JetStream
// operation underneath, in the same run: ratios hold on noisy machines.

func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// benchCtx is the caller acme with no deadline: a benchmark runs as long
// as its -benchtime asks (acme's 60 s deadline ended long runs of
// BenchmarkFanOut1000 in DeadlineExceeded).
func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+keyAcme)
}

func rawJetStream(b *testing.B, h *harness) jetstream.JetStream {
	nc := natstest.Connect(b, h.nats)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateOrUpdateStream(context.Background(), jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}}); err != nil {
		b.Fatal(err)
	}
	return js
}

// BenchmarkSubmitToSubscriber: from SubmitTurn to the subscriber's receipt
// of turn.submitted, next to raw JetStream publish-to-receive in the same
// loop. Two cases:
//   - idle: the thread is idle at each submit (the previous turn was
//     completed outside the measured interval): the submit is one event,
//     one publish. The common case of a product or a person submitting.
//   - queued: every submit queues on one busy thread, whose queue grows to
//     the service's bound (app.DefaultMaxQueuedTurns) and then stays there
//     (once full, the active turn is completed outside the measured
//     interval). A queued submit is two events (turn.submitted and
//     queue.changed), one atomic batch: on a stream at R1 on file storage
//     nats-server stages each batch in a file store of its own (ADR 0005,
//     "Atomic commands"), which this case shows.
func BenchmarkSubmitToSubscriber(b *testing.B) {
	for _, queued := range []bool{false, true} {
		name := "idle"
		if queued {
			name = "queued"
		}
		b.Run(name, func(b *testing.B) { submitToSubscriber(b, queued) })
	}
}

func submitToSubscriber(b *testing.B, queued bool) {
	h := newHarnessOn(b, true)
	ctx := benchCtx(b)
	js := rawJetStream(b, h)
	active := h.submit(ctx, "s1", "th1").Turn.TurnId // session and thread exist
	var queue []string
	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"turn.submitted"}})
	cons, err := js.OrderedConsumer(ctx, "RAW", jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		b.Fatal(err)
	}
	raw, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Stop()
	payload := make([]byte, 200)
	var lat, rawLat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		switch {
		case !queued:
			h.report(ctx, completed(active))
		case len(queue) == app.DefaultMaxQueuedTurns:
			h.report(ctx, completed(active))
			active, queue = queue[0], queue[1:]
		}
		t0 := time.Now()
		tu := h.submit(ctx, "s1", "th1").Turn
		sub.until("turn.submitted")
		lat = append(lat, time.Since(t0))
		if queued {
			queue = append(queue, tu.TurnId)
		} else {
			active = tu.TurnId
		}

		t0 = time.Now()
		if _, err := js.Publish(ctx, "raw.x", payload); err != nil {
			b.Fatal(err)
		}
		if _, err := raw.Next(); err != nil {
			b.Fatal(err)
		}
		rawLat = append(rawLat, time.Since(t0))
	}
	b.StopTimer()
	p50, p99, r50, r99 := percentile(lat, .5), percentile(lat, .99), percentile(rawLat, .5), percentile(rawLat, .99)
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	b.ReportMetric(float64(r50.Microseconds()), "raw-p50-µs")
	b.ReportMetric(float64(r99.Microseconds()), "raw-p99-µs")
	b.ReportMetric(float64(p50)/float64(r50), "p50-ratio")
	b.ReportMetric(float64(p99)/float64(r99), "p99-ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSubmitThroughput: sustained turns/s from concurrent clients,
// each on its own thread submitting a turn and reporting it completed (so
// queues stay short, as in real use), next to raw synchronous JetStream
// publishes from the same number of clients.
func BenchmarkSubmitThroughput(b *testing.B) {
	h := newHarnessOn(b, true)
	ctx := benchCtx(b)
	js := rawJetStream(b, h)
	const clients = 8
	per := max(b.N/clients, 1)
	run := func(op func(c, i int)) time.Duration {
		var wg sync.WaitGroup
		t0 := time.Now()
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					op(c, i)
				}
			}()
		}
		wg.Wait()
		return time.Since(t0)
	}
	payload := make([]byte, 200)
	b.ResetTimer()
	d := run(func(c, i int) {
		tu := h.submit(ctx, "s1", fmt.Sprintf("th%d", c)).Turn
		h.report(ctx, completed(tu.TurnId))
	})
	rawD := run(func(c, i int) {
		if _, err := js.Publish(ctx, "raw.x", payload); err != nil {
			b.Error(err)
		}
	})
	// The other raw block of a turn: a bare gRPC round trip (health Check)
	// on the same server, through the same interceptors. A turn is two
	// calls (submit, report) and two publishes (turn.submitted,
	// turn.completed): grpc-ratio says how close its two calls come to two
	// bare ones.
	cc, err := grpc.NewClient(h.listenAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	health := healthpb.NewHealthClient(cc)
	rpcD := run(func(c, i int) {
		if _, err := health.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			b.Error(err)
		}
	})
	b.StopTimer()
	n := float64(per * clients)
	b.ReportMetric(n/d.Seconds(), "turns/s")
	b.ReportMetric(n/rawD.Seconds(), "raw-publishes/s")
	b.ReportMetric((n/d.Seconds())/(n/rawD.Seconds()), "ratio")
	b.ReportMetric(n/rpcD.Seconds(), "raw-grpc-calls/s")
	b.ReportMetric(2*(n/d.Seconds())/(n/rpcD.Seconds()), "grpc-ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkFanOut1000: delivery throughput to 1,000 concurrent
// subscribers, next to 1,000 raw JetStream ordered consumers.
func BenchmarkFanOut1000(b *testing.B) {
	const subscribers, events = 1000, 20
	h := newHarnessOn(b, true)
	ctx := benchCtx(b)
	js := rawJetStream(b, h)
	tu := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, started(tu.TurnId))
	b.ResetTimer()
	var total, rawTotal time.Duration
	for it := 0; it < b.N; it++ {
		var received atomic.Int64
		var ready, done sync.WaitGroup
		cctx, cancel := context.WithCancel(ctx)
		for s := 0; s < subscribers; s++ {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				stream, err := h.client.SubscribeEvents(cctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"model.delta"}})
				if err != nil {
					b.Error(err)
					ready.Done()
					return
				}
				if _, err := stream.Recv(); err != nil { // the first heartbeat: live
					b.Error(err)
				}
				ready.Done()
				for got := 0; got < events; {
					m, err := stream.Recv()
					if err != nil {
						b.Error(err)
						return
					}
					if m.GetEvent() != nil {
						got++
						received.Add(1)
					}
				}
			}()
		}
		ready.Wait()
		t0 := time.Now()
		for e := 0; e < events; e++ {
			h.report(ctx, delta(tu.TurnId, fmt.Sprint(e)))
		}
		done.Wait()
		total += time.Since(t0)
		cancel()

		// Raw: the same fan-out through ordered consumers, no service.
		var rdone sync.WaitGroup
		var rready sync.WaitGroup
		subj := fmt.Sprintf("raw.fan%d", it)
		for s := 0; s < subscribers; s++ {
			rdone.Add(1)
			rready.Add(1)
			go func() {
				defer rdone.Done()
				cons, err := js.OrderedConsumer(ctx, "RAW", jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}, DeliverPolicy: jetstream.DeliverAllPolicy})
				if err != nil {
					b.Error(err)
					rready.Done()
					return
				}
				it, err := cons.Messages()
				rready.Done()
				if err != nil {
					b.Error(err)
					return
				}
				// Release what the raw side creates: stop the iterator and
				// delete the consumer (the server would keep it until its
				// inactive threshold, and 300 iterations of 1,000 reach the
				// stream's consumer limit).
				defer func() {
					it.Stop()
					if err := js.DeleteConsumer(context.WithoutCancel(ctx), "RAW", cons.CachedInfo().Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
						b.Error(err)
					}
				}()
				for got := 0; got < events; got++ {
					if _, err := it.Next(); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		rready.Wait()
		t1 := time.Now()
		for e := 0; e < events; e++ {
			if _, err := js.Publish(ctx, subj, make([]byte, 200)); err != nil {
				b.Fatal(err)
			}
		}
		rdone.Wait()
		rawTotal += time.Since(t1)
		if info, err := js.Stream(ctx, "RAW"); err != nil {
			b.Fatal(err)
		} else if n := info.CachedInfo().State.Consumers; n != 0 {
			b.Fatalf("the raw side left %d consumers behind", n)
		}
	}
	b.StopTimer()
	deliveries := float64(b.N * subscribers * events)
	b.ReportMetric(deliveries/total.Seconds(), "deliveries/s")
	b.ReportMetric(deliveries/rawTotal.Seconds(), "raw-deliveries/s")
	b.ReportMetric((deliveries/total.Seconds())/(deliveries/rawTotal.Seconds()), "ratio")
	b.ReportMetric(0, "ns/op")
}

package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// BenchmarkAppendsPerStreamLeader: appends/s through one stream leader at
// R1 (one nats-server process) and R3 (three clustered processes), each
// beside a raw JetStream publish to the same stream in the same run
// (docs/scaling.md). Eight appenders, each on its own aggregate with the
// expected last subject sequence chained, as commands append.
func BenchmarkAppendsPerStreamLeader(b *testing.B) {
	for _, replicas := range []int{1, 3} {
		nc := benchServers(b, replicas)
		log, err := eventlog.Open(context.Background(), nc, eventlog.Config{RuntimeID: "rt_bench", Replicas: replicas, Storage: jetstream.FileStorage})
		if err != nil {
			b.Fatal(err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		var worker atomic.Int64
		b.Run(fmt.Sprintf("R%d/raw", replicas), func(b *testing.B) {
			chained(b, 4, &worker, func(ctx context.Context, n int64, last uint64) (uint64, error) {
				return rawChained(ctx, js, fmt.Sprintf("ar.ev.bench.raw%d.session.x", n), last)
			})
		})
		b.Run(fmt.Sprintf("R%d/append", replicas), func(b *testing.B) {
			chained(b, 4, &worker, func(ctx context.Context, n int64, last uint64) (uint64, error) {
				return appendChained(ctx, log, fmt.Sprintf("sess_b%d", n), last)
			})
		})
		nc.Close()
	}
}

// BenchmarkReadOfAnAggregate: a read of one aggregate's 20 events
// (Log.Read: a consumer made, drained, removed) at R1 and R3, beside the
// raw JetStream calls it makes (an ephemeral consumer, a fetch of the 20,
// its deletion) in the same run. At R3 the read also asks the stream's
// leader where the stream ends and what follows its last event, so that a
// consumer on a trailing replica cannot cut it short (docs/scaling.md).
func BenchmarkReadOfAnAggregate(b *testing.B) {
	for _, replicas := range []int{1, 3} {
		nc := benchServers(b, replicas)
		ctx := context.Background()
		log, err := eventlog.Open(ctx, nc, eventlog.Config{RuntimeID: "rt_bench", Replicas: replicas, Storage: jetstream.FileStorage})
		if err != nil {
			b.Fatal(err)
		}
		evs := make([]*eventsv1.RuntimeEvent, 20)
		for i := range evs {
			evs[i] = warning(fmt.Sprint(i))
		}
		if _, err := log.AppendFacts(ctx, agg, evs...); err != nil {
			b.Fatal(err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		stream, err := js.Stream(ctx, "AGENTRUNTIME")
		if err != nil {
			b.Fatal(err)
		}
		subject := log.Subjects.Aggregate(agg)
		b.Run(fmt.Sprintf("R%d/raw", replicas), func(b *testing.B) {
			for b.Loop() {
				cons, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{FilterSubjects: []string{subject}, AckPolicy: jetstream.AckNonePolicy, MemoryStorage: true})
				if err != nil {
					b.Fatal(err)
				}
				// A replica may not hold the events yet, nor serve the
				// consumer yet (no responders): fetch until all came.
				for n := 0; n < len(evs); {
					msgs, err := cons.Fetch(len(evs) - n)
					if errors.Is(err, nats.ErrNoResponders) {
						continue
					}
					if err != nil {
						b.Fatal(err)
					}
					for range msgs.Messages() {
						n++
					}
					if err := msgs.Error(); err != nil && !errors.Is(err, nats.ErrNoResponders) {
						b.Fatal(err)
					}
				}
				if err := stream.DeleteConsumer(ctx, cons.CachedInfo().Name); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("R%d/read", replicas), func(b *testing.B) {
			for b.Loop() {
				n := 0
				if _, err := log.Read(ctx, []string{subject}, eventlog.FromStart, func(*eventlog.Record) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				if n != len(evs) {
					b.Fatalf("read %d, want %d", n, len(evs))
				}
			}
		})
		nc.Close()
	}
}

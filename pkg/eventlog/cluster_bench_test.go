package eventlog_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
)

// BenchmarkAppendsPerStreamLeader: appends/s through one stream leader at
// R1 (one nats-server process) and R3 (three clustered processes), each
// beside a raw JetStream publish to the same stream in the same run
// (docs/scaling.md). Eight appenders, each on its own aggregate with the
// expected last subject sequence chained, as commands append.
func BenchmarkAppendsPerStreamLeader(b *testing.B) {
	for _, replicas := range []int{1, 3} {
		var urls string
		if replicas == 1 {
			urls = natsserver.Start(b).URL
		} else {
			urls = natsserver.StartCluster(b, 3).URLs()
		}
		nc, err := nats.Connect(urls)
		if err != nil {
			b.Fatal(err)
		}
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
			b.SetParallelism(4) // 8 appenders on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				subject := fmt.Sprintf("ar.ev.bench.raw%d.session.x", worker.Add(1))
				ctx := context.Background()
				var last uint64
				for pb.Next() {
					ack, err := js.Publish(ctx, subject, []byte("0123456789abcdef0123456789abcdef"), jetstream.WithExpectLastSequencePerSubject(last))
					if err != nil {
						b.Error(err)
						return
					}
					last = ack.Sequence
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
		b.Run(fmt.Sprintf("R%d/append", replicas), func(b *testing.B) {
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				id := fmt.Sprintf("sess_b%d", worker.Add(1))
				a := eventlog.Aggregate{Tenant: "bench", Session: id, Kind: "session", ID: id}
				ctx := context.Background()
				var last uint64
				for pb.Next() {
					got, err := log.Append(ctx, a, eventlog.ExpectSequence(last), warning("b"))
					if err != nil {
						b.Error(err)
						return
					}
					last = got[0].Sequence
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
		nc.Close()
	}
}

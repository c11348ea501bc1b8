package eventlog_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
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

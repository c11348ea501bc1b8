package eventlog_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/natsembed"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// BenchmarkTwoEventCommand: a command of two events on one aggregate (a
// queued submit: turn.submitted and queue.changed) appended as two chained
// publishes (Append), as one JetStream atomic batch (AppendAtomic on a log
// made with one slot per message) or as one command message (AppendAtomic,
// docs/adr/0016-command-messages.md), beside a raw
// JetStream publish with the expected subject sequence in the same run;
// in process (dev; dev-sync with every write fsynced, dev --sync-always),
// against a nats-server process (serve) and a 3-node cluster at R3
// (serve-r3). AR_BENCH_MEMORY=1 puts the stream in memory
// (docs/adr/0005-hot-path.md, "Atomic commands", has the figures).
func BenchmarkTwoEventCommand(b *testing.B) {
	storage := jetstream.FileStorage
	if os.Getenv("AR_BENCH_MEMORY") != "" {
		storage = jetstream.MemoryStorage
	}
	for _, shape := range []string{"dev", "dev-sync", "serve", "serve-r3"} {
		var nc *nats.Conn
		replicas := 1
		switch shape {
		case "dev":
			nc = natstest.Connect(b, natstest.Server(b))
		case "dev-sync":
			// dev --sync-always: every write fsynced before its ack.
			s, err := natsembed.Start(natsembed.Config{StoreDir: b.TempDir(), SyncAlways: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(s.Shutdown)
			if nc, err = s.Connect(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(nc.Close)
		default:
			url := ""
			if shape == "serve" {
				url = natsserver.Start(b).URL
			} else {
				url, replicas = natsserver.StartCluster(b, 3).URLs(), 3
			}
			var err error
			if nc, err = nats.Connect(url); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(nc.Close)
		}
		log, err := eventlog.Open(context.Background(), nc, eventlog.Config{RuntimeID: "rt_bench", Storage: storage, Replicas: replicas})
		if err != nil {
			b.Fatal(err)
		}
		// A log made with one slot per message writes commands as
		// JetStream atomic batches, as every log did before command
		// messages.
		oneSlot, err := eventlog.Open(context.Background(), nc, eventlog.Config{RuntimeID: "rt_bench", Storage: storage, Replicas: replicas,
			Stream: "AR_ONE_SLOT", SubjectPrefix: "ar.one", ObjectBucket: "AR_ONE_SLOT_OBJECTS", Slots: 1})
		if err != nil {
			b.Fatal(err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		// Each sequence outlives a run: the benchmark calls a function again
		// with a larger N on the same subject.
		var rawLast uint64
		b.Run(shape+"/raw-publish", func(b *testing.B) {
			last := &rawLast
			for range b.N {
				ack, err := js.Publish(ctx, "ar.ev.bench.raw.session.x", []byte("0123456789abcdef0123456789abcdef"), jetstream.WithExpectLastSequencePerSubject(*last))
				if err != nil {
					b.Fatal(err)
				}
				*last = ack.Sequence
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "publishes/s")
		})
		for _, name := range []string{"chained", "atomic-batch", "command"} {
			a := eventlog.Aggregate{Tenant: "acme", Session: "sess_" + name + shape, Kind: "session", ID: "sess_" + name + shape}
			var last uint64
			b.Run(fmt.Sprintf("%s/%s", shape, name), func(b *testing.B) {
				for range b.N {
					evs := []*eventsv1.RuntimeEvent{withID(warning("a"), ids.New("evt")), withID(warning("b"), ids.New("evt"))}
					var got []eventlog.Appended
					var err error
					switch name {
					case "chained":
						got, err = log.Append(ctx, a, eventlog.ExpectSequence(last), evs...)
					case "atomic-batch":
						got, err = oneSlot.AppendAtomic(ctx, a, eventlog.ExpectSequence(last), evs...)
					default:
						got, err = log.AppendAtomic(ctx, a, eventlog.ExpectSequence(last), evs...)
					}
					if err != nil {
						b.Fatal(err)
					}
					last = got[1].Sequence
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commands/s")
			})
		}
	}
}

package eventlog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// BenchmarkAppendFacts: batches of 100 facts to a turn's subject from 1 and
// 4 clients, next to the raw blocks on the same server in the same run:
// async publishes awaited together (what AppendFacts is built on), and,
// for the record, JetStream's fast-ingest and atomic batches (orbit.go
// jetstreamext) on a stream that allows them (docs/adr/0007).
func BenchmarkAppendFacts(b *testing.B) {
	for _, clients := range []int{1, 4} {
		b.Run(fmt.Sprintf("clients%d", clients), func(b *testing.B) { benchFacts(b, clients) })
	}
}

const factBatch = 100

func benchFacts(b *testing.B, clients int) {
	srv := natstest.Server(b)
	ctx := context.Background()
	conns := make([]*nats.Conn, clients)
	logs := make([]*eventlog.Log, clients)
	jss := make([]jetstream.JetStream, clients)
	for i := range conns {
		conns[i] = natstest.Connect(b, srv)
		var err error
		if logs[i], err = eventlog.Open(ctx, conns[i], eventlog.Config{RuntimeID: "rt_bench"}); err != nil {
			b.Fatal(err)
		}
		jss[i], _ = jetstream.New(conns[i], jetstream.WithPublishAsyncMaxPending(512))
	}
	// The raw blocks write to a stream of their own that allows batches.
	if _, err := jss[0].CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"},
		Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute, AllowAtomicPublish: true, AllowBatchPublish: true}); err != nil {
		b.Fatal(err)
	}
	data := rawPayload(b)
	turn := func(c int) eventlog.Aggregate {
		return eventlog.Aggregate{Tenant: "acme", Session: "sess_1", Kind: "turn", ID: fmt.Sprintf("turn_%d", c)}
	}
	events := func() []*eventsv1.RuntimeEvent {
		evs := make([]*eventsv1.RuntimeEvent, factBatch)
		for j := range evs {
			evs[j] = &eventsv1.RuntimeEvent{Type: "model.delta", EventId: ids.New(ids.Event), ThreadId: "thr_1", TurnId: fmt.Sprintf("turn_%d", 0),
				Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: "a token or two of a model's output"}}}
		}
		return evs
	}
	rawMsgs := func(c int) []*nats.Msg {
		msgs := make([]*nats.Msg, factBatch)
		for j := range msgs {
			msgs[j] = &nats.Msg{Subject: fmt.Sprintf("raw.%d", c), Data: data, Header: nats.Header{jetstream.MsgIDHeader: []string{ids.New(ids.Event)}}}
		}
		return msgs
	}
	ways := []struct {
		name string
		send func(c int) error
	}{
		{"log", func(c int) error { _, err := logs[c].AppendFacts(ctx, turn(c), events()...); return err }},
		{"raw", func(c int) error {
			fs := make([]jetstream.PubAckFuture, 0, factBatch)
			for _, m := range rawMsgs(c) {
				f, err := jss[c].PublishMsgAsync(m)
				if err != nil {
					return err
				}
				fs = append(fs, f)
			}
			for _, f := range fs {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					return err
				}
			}
			return nil
		}},
		{"fast", func(c int) error {
			fp, err := jetstreamext.NewFastPublisher(jss[c])
			if err != nil {
				return err
			}
			msgs := rawMsgs(c)
			for _, m := range msgs[:len(msgs)-1] {
				if _, err := fp.AddMsg(m); err != nil {
					return err
				}
			}
			_, err = fp.CommitMsg(ctx, msgs[len(msgs)-1])
			return err
		}},
		{"atomic", func(c int) error {
			msgs := rawMsgs(c)
			for _, m := range msgs {
				m.Header.Del(jetstream.MsgIDHeader) // atomic batches de-duplicate as a whole
			}
			_, err := jetstreamext.PublishMsgBatch(ctx, jss[c], msgs)
			return err
		}},
	}
	took := make([]time.Duration, len(ways))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for w, way := range ways {
			t0 := time.Now()
			var wg sync.WaitGroup
			errs := make([]error, clients)
			for c := 0; c < clients; c++ {
				wg.Go(func() { errs[c] = way.send(c) })
			}
			wg.Wait()
			took[w] += time.Since(t0)
			for _, err := range errs {
				if err != nil {
					b.Fatalf("%s: %v", way.name, err)
				}
			}
		}
	}
	n := float64(b.N * clients * factBatch)
	rate := func(w int) float64 { return n / took[w].Seconds() }
	b.ReportMetric(rate(0), "events/s")
	b.ReportMetric(rate(1), "raw-async-events/s")
	b.ReportMetric(rate(0)/rate(1), "ratio")
	b.ReportMetric(rate(2), "raw-fast-events/s")
	b.ReportMetric(rate(3), "raw-atomic-events/s")
	b.ReportMetric(0, "ns/op")
}

package eventlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Each benchmark interleaves the log's operation with the raw JetStream
// operation it is built on, on the same server, and reports both rates and
// their ratio (log / raw): the machine's noise hits both sides alike.

type pair struct{ log, raw time.Duration }

func (p pair) report(b *testing.B, events int) {
	logRate := float64(events) / p.log.Seconds()
	rawRate := float64(events) / p.raw.Seconds()
	b.ReportMetric(logRate, "events/s")
	b.ReportMetric(rawRate, "raw-events/s")
	b.ReportMetric(logRate/rawRate, "ratio")
	b.ReportMetric(0, "ns/op") // the rates above are the figures; ns/op mixes both sides
}

func benchEvent(i int) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{
		Type:    "runtime.warning",
		Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: fmt.Sprint(i), Message: "benchmark event with a payload of typical size"}},
	}
}

// rawPayload is an envelope of the same size, marshalled once: the raw side
// pays for no envelope work.
func rawPayload(b *testing.B) []byte {
	ev := benchEvent(0)
	ev.EventId, ev.TenantId, ev.SessionId, ev.RuntimeId, ev.SchemaVersion = "evt_01JCX3Q8Z5V1T2N7R4W9K6M0PA", "acme", "sess_1", "rt_bench", "agentruntime-0.1.0"
	data, err := proto.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func BenchmarkAppendSingle(b *testing.B) {
	log, nc := openLog(b)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	data := rawPayload(b)
	var p pair
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := log.Append(ctx, agg, eventlog.Any, benchEvent(i)); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := js.Publish(ctx, "ar.ev.acme.sess_1.raw.r1", data); err != nil {
			b.Fatal(err)
		}
		p.log += t1.Sub(t0)
		p.raw += time.Since(t1)
	}
	p.report(b, b.N)
}

func BenchmarkAppendBatched(b *testing.B) {
	const batch = 512
	log, nc := openLog(b)
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
	ctx := context.Background()
	data := rawPayload(b)
	var p pair
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		entries := make([]eventlog.Entry, batch)
		for j := range entries {
			entries[j] = eventlog.Entry{Aggregate: agg, Event: benchEvent(j)}
		}
		t0 := time.Now()
		res, err := log.AppendBatch(ctx, entries)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		t1 := time.Now()
		futures := make([]jetstream.PubAckFuture, batch)
		for j := range futures {
			if futures[j], err = js.PublishAsync("ar.ev.acme.sess_1.raw.r1", data); err != nil {
				b.Fatal(err)
			}
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
		p.log += t1.Sub(t0)
		p.raw += time.Since(t1)
	}
	p.report(b, b.N*batch)
}

func BenchmarkReplay(b *testing.B) {
	const events = 20000
	log, nc := openLog(b)
	ctx := context.Background()
	entries := make([]eventlog.Entry, events)
	for j := range entries {
		entries[j] = eventlog.Entry{Aggregate: agg, Event: benchEvent(j)}
	}
	if _, err := log.AppendBatch(ctx, entries); err != nil {
		b.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	filter := log.Subjects.Session("acme", "sess_1")
	var p pair
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		n := 0
		if _, err := log.Read(ctx, []string{filter}, eventlog.FromStart, func(*eventlog.Record) error { n++; return nil }); err != nil || n != events {
			b.Fatalf("read %d: %v", n, err)
		}
		t1 := time.Now()
		if got := rawReplay(b, js, filter, events); got != events {
			b.Fatalf("raw replay read %d", got)
		}
		p.log += t1.Sub(t0)
		p.raw += time.Since(t1)
	}
	p.report(b, b.N*events)
}

// rawReplay reads count messages with an ordered consumer, not decoding them.
func rawReplay(b *testing.B, js jetstream.JetStream, filter string, count int) int {
	ctx := context.Background()
	cons, err := js.OrderedConsumer(ctx, "AGENTRUNTIME", jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	n := 0
	for n < count {
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}

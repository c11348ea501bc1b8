package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

func openLog(t testing.TB) (*eventlog.Log, *nats.Conn) {
	t.Helper()
	nc := natstest.Connect(t, natstest.Server(t))
	log, err := eventlog.Open(context.Background(), nc, eventlog.Config{RuntimeID: "rt_test"})
	if err != nil {
		t.Fatal(err)
	}
	return log, nc
}

func warning(code string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{
		Type:    "runtime.warning",
		Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: code}},
	}
}

var agg = eventlog.Aggregate{Tenant: "acme", Session: "sess_1", Kind: "session", ID: "sess_1"}

// at is the position of the n-th message of an unpartitioned log when the
// message holds one event: the last of its slots (slots.go).
func at(n int) uint64 { return uint64(n)*eventlog.DefaultSlots + eventlog.DefaultSlots - 1 }

func readAll(t testing.TB, log *eventlog.Log, filters ...string) []*eventsv1.RuntimeEvent {
	t.Helper()
	var out []*eventsv1.RuntimeEvent
	if _, err := log.Read(testkit.Context(t), filters, eventlog.FromStart, func(r *eventlog.Record) error {
		out = append(out, r.Event)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAppendStampsAndReadsBack(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	ev := warning("w1")
	got, err := log.Append(ctx, agg, eventlog.ExpectSequence(0), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Sequence != at(1) || got[0].Duplicate {
		t.Fatalf("appended %+v, want one event at %d", got, at(1))
	}
	back := readAll(t, log)
	if len(back) != 1 {
		t.Fatalf("read %d events, want 1", len(back))
	}
	b := back[0]
	if b.Sequence != at(1) || b.EventId != ev.EventId || b.EventId == "" || b.TenantId != "acme" ||
		b.SessionId != "sess_1" || b.RuntimeId != "rt_test" || b.SchemaVersion == "" || b.Timestamp == nil {
		t.Fatalf("read back %v", b)
	}
	if b.GetRuntimeWarning().GetCode() != "w1" {
		t.Fatalf("payload lost: %v", b)
	}
}

func TestExpectedSequenceConflicts(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	if _, err := log.Append(ctx, agg, eventlog.ExpectSequence(0), warning("a")); err != nil {
		t.Fatal(err)
	}
	// A second writer that also believed the aggregate was empty loses.
	_, err := log.Append(ctx, agg, eventlog.ExpectSequence(0), warning("b"))
	if !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
	// Another aggregate is not affected by this one's sequence.
	other := agg
	other.ID = "sess_2"
	other.Session = "sess_2"
	if _, err := log.Append(ctx, other, eventlog.ExpectSequence(0), warning("c")); err != nil {
		t.Fatalf("independent aggregate: %v", err)
	}
	last, err := log.LastSequence(ctx, agg)
	if err != nil || last != at(1) {
		t.Fatalf("LastSequence = %d, %v; want %d", last, err, at(1))
	}
	if _, err := log.Append(ctx, agg, eventlog.ExpectSequence(last), warning("d")); err != nil {
		t.Fatalf("append at the right sequence: %v", err)
	}
}

func TestRetriedAppendIsDeduplicated(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	first := warning("x")
	first.EventId = "evt_fixed"
	a, err := log.Append(ctx, agg, eventlog.ExpectSequence(0), first)
	if err != nil {
		t.Fatal(err)
	}
	// The retry carries the same event id and the same (now stale)
	// expectation: it must report the first write, not a conflict.
	retry := warning("x")
	retry.EventId = "evt_fixed"
	b, err := log.Append(ctx, agg, eventlog.ExpectSequence(0), retry)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if !b[0].Duplicate || b[0].Sequence != a[0].Sequence {
		t.Fatalf("retry = %+v, want duplicate of %+v", b[0], a[0])
	}
	if n := len(readAll(t, log)); n != 1 {
		t.Fatalf("log holds %d events, want 1", n)
	}
}

func TestConcurrentAppendersToOneAggregate(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	const writers, each = 16, 20
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		seqs      = map[uint64]string{}
		conflicts int
	)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				ev := warning(fmt.Sprintf("w%d-%d", w, i))
				for {
					last, err := log.LastSequence(ctx, agg)
					if err != nil {
						t.Error(err)
						return
					}
					got, err := log.Append(ctx, agg, eventlog.ExpectSequence(last), ev)
					if errors.Is(err, eventlog.ErrConflict) {
						mu.Lock()
						conflicts++
						mu.Unlock()
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if prev, dup := seqs[got[0].Sequence]; dup {
						t.Errorf("sequence %d given to %s and %s", got[0].Sequence, prev, ev.EventId)
					}
					seqs[got[0].Sequence] = ev.EventId
					mu.Unlock()
					break
				}
			}
		}()
	}
	wg.Wait()
	back := readAll(t, log)
	if len(back) != writers*each || len(seqs) != writers*each {
		t.Fatalf("log holds %d events, %d acknowledged; want %d", len(back), len(seqs), writers*each)
	}
	seen := map[string]bool{}
	for i, ev := range back {
		if ev.Sequence != at(i+1) {
			t.Fatalf("event %d has sequence %d: gap or reorder", i, ev.Sequence)
		}
		if seqs[ev.Sequence] != ev.EventId || seen[ev.EventId] {
			t.Fatalf("event at %d is %s, acknowledged %s", ev.Sequence, ev.EventId, seqs[ev.Sequence])
		}
		seen[ev.EventId] = true
	}
	t.Logf("%d conflicts retried", conflicts)
}

func TestAppendChainsExpectationsWithinACall(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	got, err := log.Append(ctx, agg, eventlog.ExpectSequence(0), warning("1"), warning("2"), warning("3"))
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range got {
		if a.Sequence != at(i+1) {
			t.Fatalf("event %d at %d", i, a.Sequence)
		}
	}
}

func TestInvalidEventsAreRefused(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	cases := map[string]struct {
		agg eventlog.Aggregate
		ev  *eventsv1.RuntimeEvent
	}{
		"unknown type":     {agg, &eventsv1.RuntimeEvent{Type: "nope"}},
		"missing scope":    {agg, &eventsv1.RuntimeEvent{Type: "turn.started"}},
		"tenant mismatch":  {agg, func() *eventsv1.RuntimeEvent { e := warning("x"); e.TenantId = "other"; return e }()},
		"session mismatch": {agg, func() *eventsv1.RuntimeEvent { e := warning("x"); e.SessionId = "sess_9"; return e }()},
		"session on a session-less aggregate": {eventlog.Aggregate{Tenant: "acme", Session: eventlog.NoSession, Kind: "registry", ID: "r"},
			func() *eventsv1.RuntimeEvent { e := warning("x"); e.SessionId = "sess_9"; return e }()},
		"subject-unsafe id":   {eventlog.Aggregate{Tenant: "acme", Session: "s.1", Kind: "session", ID: "x"}, warning("x")},
		"subject-unsafe kind": {eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "a*", ID: "x"}, warning("x")},
		"nil event":           {agg, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := log.Append(ctx, c.agg, eventlog.Any, c.ev); !errors.Is(err, eventlog.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
	if n := len(readAll(t, log)); n != 0 {
		t.Fatalf("invalid appends left %d events", n)
	}
}

func TestSessionlessFacts(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	tenantAgg := eventlog.Aggregate{Tenant: "acme", Session: eventlog.NoSession, Kind: "registry", ID: "models"}
	if _, err := log.Append(ctx, tenantAgg, eventlog.Any, &eventsv1.RuntimeEvent{Type: "limit.changed"}); err != nil {
		t.Fatal(err)
	}
	back := readAll(t, log, log.Subjects.Tenant("acme"))
	if len(back) != 1 || back[0].SessionId != "" {
		t.Fatalf("read %v", back)
	}
}

func TestSubscribeFromASequenceWithFilters(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	other := eventlog.Aggregate{Tenant: "acme", Session: "sess_2", Kind: "session", ID: "sess_2"}
	otherTenant := eventlog.Aggregate{Tenant: "globex", Session: "sess_1", Kind: "session", ID: "sess_1"}
	for i := 0; i < 3; i++ {
		for _, a := range []eventlog.Aggregate{agg, other, otherTenant} {
			if _, err := log.Append(ctx, a, eventlog.Any, warning(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Messages: acme/sess_1 at 1,4,7. Start after the first of them.
	sub, err := log.Subscribe(ctx, []string{log.Subjects.Session("acme", "sess_1")}, eventlog.FromSequence(at(1)+1))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	want := []uint64{at(4), at(7), at(10)}
	if _, err := log.Append(ctx, agg, eventlog.Any, warning("live")); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		r, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.Event.Sequence != w || r.Event.TenantId != "acme" || r.Event.SessionId != "sess_1" {
			t.Fatalf("got %d %s/%s, want sequence %d of acme/sess_1", r.Event.Sequence, r.Event.TenantId, r.Event.SessionId, w)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if r, err := sub.Next(short); err == nil {
		t.Fatalf("unexpected event %d from another filter", r.Event.Sequence)
	}
}

func TestAppendBatch(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	var entries []eventlog.Entry
	for i := 0; i < 1000; i++ {
		a := agg
		a.ID = fmt.Sprintf("s%d", i%10)
		entries = append(entries, eventlog.Entry{Aggregate: a, Expect: eventlog.Any, Event: warning(fmt.Sprint(i))})
	}
	// One bad entry fails alone.
	entries = append(entries, eventlog.Entry{Aggregate: agg, Event: &eventsv1.RuntimeEvent{Type: "nope"}})
	res, err := log.AppendBatch(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for i, r := range res[:1000] {
		if r.Err != nil || r.Sequence == 0 || seen[r.Sequence] {
			t.Fatalf("entry %d: %+v", i, r)
		}
		seen[r.Sequence] = true
	}
	if !errors.Is(res[1000].Err, eventlog.ErrInvalid) {
		t.Fatalf("bad entry: %v", res[1000].Err)
	}
	if n := len(readAll(t, log)); n != 1000 {
		t.Fatalf("log holds %d, want 1000", n)
	}
}

func TestTraceContextCrossesTheLog(t *testing.T) {
	log, nc := openLog(t)
	ctx := testkit.Context(t)
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	spanCtx, span := tp.Tracer("test").Start(ctx, "append")
	if _, err := log.Append(spanCtx, agg, eventlog.Any, warning("traced")); err != nil {
		t.Fatal(err)
	}
	span.End()
	// A producer in another language writes a capitalised header key.
	foreign := &nats.Msg{Subject: log.Subjects.Aggregate(agg), Header: nats.Header{}}
	foreignEv := warning("foreign")
	foreignEv.EventId, foreignEv.TenantId, foreignEv.SessionId = "evt_foreign", "acme", "sess_1"
	foreign.Data, _ = proto.Marshal(foreignEv)
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	foreign.Header["Traceparent"] = []string{parent}
	js, _ := jetstream.New(nc)
	if _, err := js.PublishMsg(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	var recs []*eventlog.Record
	if _, err := log.Read(ctx, nil, eventlog.FromStart, func(r *eventlog.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("read %d", len(recs))
	}
	if recs[0].Header.Get("traceparent") == "" {
		t.Fatalf("no lowercase traceparent header: %v", recs[0].Header)
	}
	if got := recs[0].Event.TraceId; got != span.SpanContext().TraceID().String() {
		t.Fatalf("envelope trace id %q, want %s", got, span.SpanContext().TraceID())
	}
	for i, want := range []string{span.SpanContext().TraceID().String(), "4bf92f3577b34da6a3ce929d0e0e4736"} {
		sc := trace.SpanContextFromContext(log.TraceContext(context.Background(), recs[i]))
		if sc.TraceID().String() != want {
			t.Errorf("record %d joins trace %s, want %s", i, sc.TraceID(), want)
		}
	}
}

func TestObjects(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	ref, err := log.PutObject(ctx, "tool-output/call_1", "tool", "text/plain", big)
	if err != nil {
		t.Fatal(err)
	}
	if ref.SizeBytes != int64(len(big)) || ref.Sha256 == "" || ref.Preview == "" || len(ref.Preview) > 512 || ref.MediaType != "text/plain" {
		t.Fatalf("ref %v", ref)
	}
	back, err := log.GetObject(ctx, ref.Uri)
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != string(big) {
		t.Fatal("object content differs")
	}
	if _, err := log.GetObject(ctx, "object://AGENTRUNTIME_OBJECTS/missing"); !errors.Is(err, eventlog.ErrObjectNotFound) {
		t.Fatalf("missing object: %v", err)
	}
	if _, err := log.GetObject(ctx, "http://elsewhere/x"); !errors.Is(err, eventlog.ErrInvalid) {
		t.Fatalf("foreign uri: %v", err)
	}
}

func TestEventsSurviveAServerRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := testkit.Context(t)
	srv := natstest.ServerAt(t, dir)
	nc := natstest.Connect(t, srv)
	log, err := eventlog.Open(ctx, nc, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := log.Append(ctx, agg, eventlog.Any, warning(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	nc.Close()
	srv.Shutdown()

	srv2 := natstest.ServerAt(t, dir)
	log2, err := eventlog.Open(ctx, natstest.Connect(t, srv2), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, log2)); n != 50 {
		t.Fatalf("after restart the log holds %d events, want 50", n)
	}
}

func TestAppendFactsKeepsOrderAnswersSequencesAndDeduplicates(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	turn := eventlog.Aggregate{Tenant: "acme", Session: "sess_1", Kind: "turn", ID: "turn_1"}
	batch := func(from, to int) []*eventsv1.RuntimeEvent {
		var evs []*eventsv1.RuntimeEvent
		for i := from; i < to; i++ {
			evs = append(evs, &eventsv1.RuntimeEvent{EventId: fmt.Sprintf("evt_fact%03d", i), Type: "runtime.warning",
				Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: fmt.Sprint(i)}}})
		}
		return evs
	}
	first, err := log.AppendFacts(ctx, turn, batch(0, 100)...)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range first {
		if a.EventID != fmt.Sprintf("evt_fact%03d", i) || a.Duplicate || (i > 0 && a.Sequence != first[i-1].Sequence+eventlog.DefaultSlots) {
			t.Fatalf("answer %d: %+v after %+v", i, a, first[max(i-1, 0)])
		}
	}
	// A retry that overlaps what landed appends only what is new, in order.
	again, err := log.AppendFacts(ctx, turn, batch(50, 150)...)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range again {
		if dup := i < 50; a.Duplicate != dup || (dup && a.Sequence != first[50+i].Sequence) {
			t.Fatalf("retry answer %d: %+v", i, a)
		}
	}
	got := readAll(t, log, log.Subjects.Aggregate(turn))
	if len(got) != 150 {
		t.Fatalf("log holds %d facts, want 150", len(got))
	}
	for i, ev := range got {
		if ev.GetRuntimeWarning().GetCode() != fmt.Sprint(i) {
			t.Fatalf("fact %d is %q: out of order", i, ev.GetRuntimeWarning().GetCode())
		}
	}
	// An invalid event anywhere refuses the batch before anything is sent.
	bad := batch(200, 203)
	bad[2].Type = ""
	if _, err := log.AppendFacts(ctx, turn, bad...); !errors.Is(err, eventlog.ErrInvalid) {
		t.Fatalf("invalid batch: %v", err)
	}
	if n := len(readAll(t, log, log.Subjects.Aggregate(turn))); n != 150 {
		t.Fatalf("an invalid batch appended %d facts", n-150)
	}
}

// A batch larger than the in-flight bound, published faster than the
// server acknowledges, lands whole and in order: a publish that finds
// every slot taken waits for the acks instead of being skipped (which
// landed the rest of the batch around a hole: TestOldSessionRecovery of
// the control service lost one turn in about ten runs).
func TestBatchAppendNeverSkipsAStalledPublish(t *testing.T) {
	ctx := context.Background()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{MaxAsyncPending: 2, AsyncStallWait: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	agg := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "thread", ID: "th1"}
	const n = 500
	entries := make([]eventlog.Entry, n)
	facts := make([]*eventsv1.RuntimeEvent, n)
	for i := range entries {
		entries[i] = eventlog.Entry{Aggregate: agg, Event: &eventsv1.RuntimeEvent{Type: "turn.completed", ThreadId: "th1", TurnId: fmt.Sprintf("turn_%04d", i),
			Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{}}}}
		facts[i] = &eventsv1.RuntimeEvent{Type: "model.delta", ThreadId: "th1", TurnId: "turn_facts",
			Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: fmt.Sprint(i)}}}
	}
	res, err := log.AppendBatch(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("entry %d: %v", i, r.Err)
		}
	}
	if _, err := log.AppendFacts(ctx, eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "turn", ID: "turn_facts"}, facts...); err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := log.Read(ctx, nil, eventlog.FromStart, func(r *eventlog.Record) error {
		got = append(got, r.Event.GetTurnId()+"/"+r.Event.GetModelDelta().GetText())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*n {
		t.Fatalf("the log holds %d events, want %d", len(got), 2*n)
	}
	for i := range n {
		if got[i] != fmt.Sprintf("turn_%04d/", i) || got[n+i] != fmt.Sprintf("turn_facts/%d", i) {
			t.Fatalf("event %d is %s / %s: out of order", i, got[i], got[n+i])
		}
	}
}

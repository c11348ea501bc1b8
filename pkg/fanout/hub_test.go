package fanout_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fanout"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

type fixture struct {
	log *eventlog.Log
	js  jetstream.JetStream
	hub *fanout.Hub
}

func setup(t testing.TB, cfg fanout.Config) fixture { return setupPartitions(t, cfg, 1) }

// setupPartitions is setup on a log of partitions streams.
func setupPartitions(t testing.TB, cfg fanout.Config, partitions int) fixture {
	t.Helper()
	nc := natstest.Connect(t, natstest.Server(t))
	log, err := eventlog.Open(context.Background(), nc, eventlog.Config{Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	hub := fanout.New(log, cfg)
	t.Cleanup(hub.Close)
	return fixture{log: log, js: js, hub: hub}
}

func warning(code string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: "runtime.warning", Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: code}}}
}

func appendTo(t testing.TB, log *eventlog.Log, tenant, session, code string) uint64 {
	t.Helper()
	res, err := log.Append(context.Background(), eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "session", ID: session}, eventlog.Any, warning(code))
	if err != nil {
		t.Error(err)
		return 0
	}
	return res[0].Sequence
}

func (f fixture) consumers(t testing.TB) int {
	t.Helper()
	s, err := f.js.Stream(context.Background(), "AGENTRUNTIME")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// collect reads a subscription until it has seen sequence last.
func collect(ctx context.Context, sub *fanout.Subscription, last uint64) ([]uint64, error) {
	var seqs []uint64
	for len(seqs) == 0 || seqs[len(seqs)-1] < last {
		recs, err := sub.Next(ctx, time.Second)
		if err != nil {
			return seqs, err
		}
		for _, r := range recs {
			seqs = append(seqs, r.Event.Sequence)
		}
	}
	return seqs, nil
}

// Subscriptions start in the past, at the head and in the future while
// four writers append; some have a tiny queue so the hub detaches them
// and they replay and re-attach again and again. Each must see exactly the
// log's events of its session from its start, in order: no gap at the
// hand-off, no duplicate. On a log of three partitions too, where s1 and
// s2 are in different partitions and a session's positions are its
// partition's.
func TestHandOffRacingAppendsHasNoGapAndNoDuplicate(t *testing.T) {
	// A short memory of recent records, by count or by bytes, makes
	// hand-offs read both from the log and from memory.
	for name, cfg := range map[string]fanout.Config{
		"recent 16":        {MaxReplays: 4, ReplayBatch: 7, Recent: 16},
		"recent 400 bytes": {MaxReplays: 4, ReplayBatch: 7, RecentBytes: 400},
	} {
		t.Run(name, func(t *testing.T) { handOffRace(t, cfg, 1) })
		t.Run(name+" P=3", func(t *testing.T) { handOffRace(t, cfg, 3) })
	}
}

func handOffRace(t *testing.T, cfg fanout.Config, partitions int) {
	f := setupPartitions(t, cfg, partitions)
	if partitions > 1 && f.log.Subjects.PartitionOf("acme", "s1") == f.log.Subjects.PartitionOf("acme", "s2") {
		t.Fatal("s1 and s2 share a partition: pick other sessions")
	}
	ctx := testkit.Context(t)
	const writers, perWriter = 4, 80
	// History before the first subscription.
	for i := range 40 {
		appendTo(t, f.log, "acme", "s1", fmt.Sprint("pre", i))
		appendTo(t, f.log, "acme", "s2", fmt.Sprint("pre", i))
	}
	var appended sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		appended.Add(1)
		go func() {
			defer appended.Done()
			<-start
			for i := range perWriter {
				session := "s1"
				if i%3 == 0 {
					session = "s2" // events the s1 subscribers must not see
				}
				appendTo(t, f.log, "acme", session, fmt.Sprint(w, ":", i))
			}
		}()
	}
	type result struct {
		from uint64
		seqs []uint64
		err  error
	}
	results := make(chan result, 64)
	lastS1 := &latch{ch: make(chan struct{})}
	var subscribed sync.WaitGroup
	close(start)
	for i := range 24 {
		subscribed.Add(1)
		go func() {
			defer subscribed.Done()
			head, err := f.log.Of("acme", "s1").Head(ctx)
			if err != nil {
				results <- result{err: err}
				return
			}
			from := []uint64{1, max(head/2, 1), head, head + 1, fanout.Now, head + 30}[i%6]
			buffer := 0
			if i%2 == 0 {
				buffer = 2
			}
			sub, err := f.hub.Subscribe(ctx, fanout.Filter{Tenant: "acme", Session: "s1"}, from, fanout.Options{Buffer: buffer})
			if err != nil {
				results <- result{err: err}
				return
			}
			defer sub.Close()
			// Every subscriber reads up to the last event of s1, which is
			// appended after all others.
			seqs, err := collect(ctx, sub, lastS1.wait())
			results <- result{from: from, seqs: seqs, err: err}
		}()
	}
	appended.Wait()
	lastS1.set(appendTo(t, f.log, "acme", "s1", "last"))
	subscribed.Wait()
	close(results)

	var want []uint64
	if _, err := f.log.Read(ctx, []string{f.log.Subjects.Session("acme", "s1")}, eventlog.FromStart, func(r *eventlog.Record) error {
		want = append(want, r.Event.Sequence)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for r := range results {
		n++
		if r.err != nil {
			t.Fatal(r.err)
		}
		if len(r.seqs) == 0 {
			t.Fatalf("from %d: nothing delivered", r.from)
		}
		// The expected tail starts at the first delivered event; for a
		// cursor it must be the first event of s1 at or after the cursor.
		i := 0
		for i < len(want) && want[i] < r.seqs[0] {
			i++
		}
		if r.from != fanout.Now && i > 0 && want[i-1] >= r.from {
			t.Fatalf("from %d: first delivered %d skips %d", r.from, r.seqs[0], want[i-1])
		}
		if got, exp := r.seqs, want[i:]; fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Fatalf("from %d: delivered %d events, want %d\n got %v\nwant %v", r.from, len(got), len(exp), got, exp)
		}
	}
	if n != 24 {
		t.Fatalf("%d results", n)
	}
	if st := f.hub.Stats(); st.Subscriptions != 0 || st.Replays != 0 {
		t.Fatalf("after every subscription closed: %+v", st)
	}
}

// latch hands the last sequence to the subscribers once it is known.
type latch struct {
	ch  chan struct{}
	seq uint64
}

func (l *latch) set(seq uint64) { l.seq = seq; close(l.ch) }
func (l *latch) wait() uint64   { <-l.ch; return l.seq }

// Opening and closing thousands of subscriptions, from now and from the
// past, never moves the stream's consumer count from the hub's own one:
// history is read with direct gets, not consumers.
func TestConsumerCountDoesNotGrowWithSubscriptions(t *testing.T) {
	f := setup(t, fanout.Config{MaxReplays: 4})
	ctx := testkit.Context(t)
	for i := range 20 {
		appendTo(t, f.log, "acme", "s1", fmt.Sprint(i))
	}
	first, err := f.hub.Subscribe(ctx, fanout.Filter{Tenant: "acme"}, fanout.Now, fanout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	baseline := f.consumers(t)
	if baseline != 1 {
		t.Fatalf("%d consumers with the hub running, want its one", baseline)
	}
	const n = 3000
	subs := make([]*fanout.Subscription, 0, n)
	for i := range n {
		from := fanout.Now
		if i%10 == 0 {
			from = 1 // history: a transient replay
		}
		sub, err := f.hub.Subscribe(ctx, fanout.Filter{Tenant: "acme", Session: fmt.Sprint("s", i%50)}, from, fanout.Options{})
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
		if i%500 == 0 {
			if c := f.consumers(t); c != baseline {
				t.Fatalf("%d consumers with %d subscriptions", c, i+1)
			}
		}
	}
	if got := f.hub.Stats().Subscriptions; got != n+1 {
		t.Fatalf("hub holds %d subscriptions, want %d", got, n+1)
	}
	// Everyone attached gets a live event of its session.
	seq := appendTo(t, f.log, "acme", "s7", "live")
	for i := 7; i < n; i += 50 {
		if _, err := collect(ctx, subs[i], seq); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range subs {
		s.Close()
	}
	if c := f.consumers(t); c != baseline {
		t.Fatalf("%d consumers after closing, want %d", c, baseline)
	}
	if st := f.hub.Stats(); st.Subscriptions != 1 || st.Replays != 0 {
		t.Fatalf("after closing: %+v", st)
	}
	first.Close()
}

// A subscription sees only its tenant, its session and what Match keeps,
// and a closed hub ends it.
func TestFiltersAndClose(t *testing.T) {
	f := setup(t, fanout.Config{})
	ctx := testkit.Context(t)
	match := func(ev *eventsv1.RuntimeEvent) bool { return ev.GetRuntimeWarning().GetCode() != "skip" }
	tenant, err := f.hub.Subscribe(ctx, fanout.Filter{Tenant: "acme", Match: match}, fanout.Now, fanout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	session, err := f.hub.Subscribe(ctx, fanout.Filter{Tenant: "acme", Session: "s2"}, fanout.Now, fanout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, f.log, "globex", "s1", "other tenant")
	appendTo(t, f.log, "acme", "s1", "skip")
	a := appendTo(t, f.log, "acme", "s1", "a")
	b := appendTo(t, f.log, "acme", "s2", "b")
	got, err := collect(ctx, tenant, b)
	if err != nil || fmt.Sprint(got) != fmt.Sprint([]uint64{a, b}) {
		t.Fatalf("tenant subscription got %v %v, want [%d %d]", got, err, a, b)
	}
	got, err = collect(ctx, session, b)
	if err != nil || fmt.Sprint(got) != fmt.Sprint([]uint64{b}) {
		t.Fatalf("session subscription got %v %v, want [%d]", got, err, b)
	}
	// Idle: no records, no error.
	if recs, err := session.Next(ctx, 20*time.Millisecond); err != nil || len(recs) != 0 {
		t.Fatalf("idle Next: %v %v", recs, err)
	}
	// Subscriptions with one Key share one Match call per event.
	var calls atomic.Int64
	counted := fanout.Filter{Tenant: "acme", Session: "s3", Key: "not skip", Match: func(ev *eventsv1.RuntimeEvent) bool {
		calls.Add(1)
		return match(ev)
	}}
	var shared []*fanout.Subscription
	for range 3 {
		sub, err := f.hub.Subscribe(ctx, counted, fanout.Now, fanout.Options{})
		if err != nil {
			t.Fatal(err)
		}
		shared = append(shared, sub)
	}
	appendTo(t, f.log, "acme", "s3", "skip")
	c := appendTo(t, f.log, "acme", "s3", "c")
	for _, sub := range shared {
		if got, err := collect(ctx, sub, c); err != nil || fmt.Sprint(got) != fmt.Sprint([]uint64{c}) {
			t.Fatalf("shared filter got %v %v, want [%d]", got, err, c)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("Match called %d times for 2 events and 3 subscriptions of one Key", n)
	}
	f.hub.Close()
	// What was queued is still delivered, then the end.
	if recs, err := tenant.Next(ctx, time.Second); err != nil || len(recs) != 1 || recs[0].Event.Sequence != c {
		t.Fatalf("after Close, the queued event: %v %v", recs, err)
	}
	if _, err := tenant.Next(ctx, time.Second); !errors.Is(err, fanout.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := f.hub.Subscribe(ctx, fanout.Filter{Tenant: "acme"}, fanout.Now, fanout.Options{}); !errors.Is(err, fanout.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
}

// The hub's consumer deleted on the server (an operator, a lost server) is
// made again from where the hub was: subscriptions miss nothing.
func TestHubFollowsOnAfterItsConsumerIsDeleted(t *testing.T) {
	f := setup(t, fanout.Config{})
	ctx := testkit.Context(t)
	sub, err := f.hub.Subscribe(ctx, fanout.Filter{Tenant: "acme", Session: "s1"}, fanout.Now, fanout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := appendTo(t, f.log, "acme", "s1", "a")
	if got, err := collect(ctx, sub, a); err != nil || fmt.Sprint(got) != fmt.Sprint([]uint64{a}) {
		t.Fatalf("before: %v %v", got, err)
	}
	stream, err := f.js.Stream(ctx, "AGENTRUNTIME")
	if err != nil {
		t.Fatal(err)
	}
	names := stream.ConsumerNames(ctx)
	var deleted int
	for name := range names.Name() {
		if err := stream.DeleteConsumer(ctx, name); err != nil {
			t.Fatal(err)
		}
		deleted++
	}
	if deleted != 1 {
		t.Fatalf("deleted %d consumers, want the hub's one", deleted)
	}
	var want []uint64
	for i := range 5 {
		want = append(want, appendTo(t, f.log, "acme", "s1", fmt.Sprint("after", i)))
	}
	got, err := collect(ctx, sub, want[len(want)-1])
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the consumer was deleted: got %v %v, want %v", got, err, want)
	}
	if c := f.consumers(t); c != 1 {
		t.Fatalf("%d consumers, want the hub's new one", c)
	}
}

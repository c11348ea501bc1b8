package projector_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// perSession appends every event's code to its session's document: what a
// partition-safe read model looks like (each document written from one
// session, so from one partition).
type perSession struct{ name string }

func (p perSession) Name() string    { return p.name }
func (perSession) Filters() []string { return nil }
func (p perSession) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	key := p.name + "/" + rec.Event.GetSessionId()
	cur, err := store.Get(ctx, key)
	if err != nil && err != projection.ErrNotFound {
		return projection.Batch{}, err
	}
	next := string(cur) + rec.Event.GetRuntimeWarning().GetCode() + ","
	return projection.Batch{Puts: []projection.KV{{Key: key, Value: []byte(next)}}}, nil
}

// counting counts the reactions to each event.
type counting struct {
	mu   sync.Mutex
	seen map[string]int
}

func (*counting) Name() string                      { return "test.react" }
func (*counting) Filters() []string                 { return nil }
func (*counting) Wants(*eventsv1.RuntimeEvent) bool { return true }
func (c *counting) React(_ context.Context, rec *eventlog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[rec.Event.GetEventId()]++
	return nil
}

// TestConsumersOfAPartitionedLog: on a log of three partitions, projections
// (RunAll) and a reactor read through one process feed: one subscription
// per partition, a checkpoint per partition and consumer, every event
// folded and reacted to once, and a read waiting for an event's position
// waits for its own partition.
func TestConsumersOfAPartitionedLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	store := projection.NewMemory()
	feed := projector.NewFeed(log)
	rctx, stop := context.WithCancel(projector.ContextWithOptions(ctx, projector.WithFeed(feed)))
	defer stop()
	reactor := &counting{seen: map[string]int{}}
	done := make(chan error, 2)
	go func() {
		done <- projector.RunAll(rctx, log, store, nil, []projector.Projection{perSession{"test.a"}, perSession{"test.b"}})
	}()
	go func() { done <- projector.React(rctx, log, store, reactor, nil) }()

	const sessions, events = 24, 5
	last := map[string]uint64{}
	for round := range events {
		for i := range sessions {
			s := "sess_" + strconv.Itoa(i)
			a := eventlog.Aggregate{Tenant: "acme", Session: s, Kind: "session", ID: s}
			got, err := log.AppendFacts(ctx, a, warning(strconv.Itoa(round)))
			if err != nil {
				t.Fatal(err)
			}
			last[s] = got[0].Sequence
		}
	}
	for s, pos := range last {
		for _, name := range []string{"test.a", "test.b", "test.react"} {
			if _, err := projector.WaitFor(ctx, log, store, name, pos, 20*time.Second); err != nil {
				t.Fatalf("%s waiting for %s's last event at %d (partition %d): %v", name, s, pos, log.PartitionOfPosition(pos), err)
			}
		}
		for _, name := range []string{"test.a", "test.b"} {
			doc, err := store.Get(ctx, name+"/"+s)
			if err != nil || string(doc) != "0,1,2,3,4," {
				t.Fatalf("%s/%s = %q (%v): every event once, in order", name, s, doc, err)
			}
		}
	}
	// A read of a session covers its partition's checkpoint, with no token
	// too; caught up with the log is caught up with every partition's head.
	for s, pos := range last {
		got, err := projector.WaitForSession(ctx, log, store, "test.a", "acme", s, 0, time.Second)
		if err != nil || got < pos || log.PartitionOfPosition(got) != log.PartitionOfPosition(pos) {
			t.Fatalf("a read of %s covers %d (%v), want its partition's checkpoint, at least %d", s, got, err, pos)
		}
	}
	if err := projector.CaughtUp(ctx, log, store, "test.b", nil, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, view := range log.Views() {
		_, head, err := view.Bounds(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cp, err := projector.Checkpoint(ctx, view, store, "test.b"); err != nil || cp != head {
			t.Fatalf("caught up, yet a partition's checkpoint is %d (%v) and its head %d", cp, err, head)
		}
	}
	if _, err := projector.Checkpoint(ctx, log, store, "test.b"); err == nil {
		t.Fatal("the checkpoint of a partitioned log's whole is no partition's: want an error")
	}
	for k := range 3 {
		for _, name := range []string{"test.a", "test.b", "test.react"} {
			if cp, err := store.Checkpoint(ctx, projector.CheckpointName(name, 3, k)); err != nil || cp == 0 || log.PartitionOfPosition(cp) != k {
				t.Fatalf("%s checkpoint of partition %d: %d (%v)", name, k, cp, err)
			}
		}
	}
	reactor.mu.Lock()
	if len(reactor.seen) != sessions*events {
		t.Errorf("reacted to %d events, %d appended", len(reactor.seen), sessions*events)
	}
	for id, n := range reactor.seen {
		if n != 1 {
			t.Errorf("reacted %d times to %s", n, id)
		}
	}
	reactor.mu.Unlock()
	if n := feed.Opened(); n != 3 {
		t.Errorf("the process feed opened %d subscriptions: one per partition is 3", n)
	}
	stop()
	for range 2 {
		if err := <-done; err != context.Canceled {
			t.Fatalf("consumer ended with %v", err)
		}
	}
}

func warning(code string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{
		Type:    "runtime.warning",
		Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: code}},
	}
}

// headWaiter waits, for every event, until the read model test.a holds every
// partition's events (as a reactor that lists across sessions does), and
// records the waits that ran out.
type headWaiter struct {
	log    *eventlog.Log
	store  projection.Store
	mu     sync.Mutex
	behind []error
}

func (*headWaiter) Name() string                      { return "test.wait" }
func (*headWaiter) Filters() []string                 { return nil }
func (*headWaiter) Wants(*eventsv1.RuntimeEvent) bool { return true }
func (w *headWaiter) React(ctx context.Context, _ *eventlog.Record) error {
	if err := projector.CaughtUp(ctx, w.log, w.store, "test.a", nil, 3*time.Second); err != nil {
		w.mu.Lock()
		w.behind = append(w.behind, err)
		w.mu.Unlock()
		return err
	}
	return nil
}

// Reactors of two partitions that each wait for a read model of every
// partition do not wait for each other: a reactor does not read through
// the process feed the read models read (a feed moves at its slowest
// consumer's pace, so each would hold back the read model the other waits
// for, until the waits run out).
func TestReactorsWaitingOnEveryPartitionDoNotBlockEachOther(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	store := projection.NewMemory()
	w := &headWaiter{log: log, store: store}
	rctx, stop := context.WithCancel(projector.ContextWithOptions(ctx, projector.WithFeed(projector.NewFeed(log)), projector.WithMaxBatch(1)))
	defer stop()
	done := make(chan error, 2)
	go func() { done <- projector.RunAll(rctx, log, store, nil, []projector.Projection{perSession{"test.a"}}) }()
	go func() { done <- projector.React(rctx, log, store, w, nil) }()
	// Events in both partitions while both consumers follow the log.
	heads := make([]uint64, 2)
	for i := 0; heads[0] == 0 || heads[1] == 0 || i < 200; i++ {
		s := "sess_" + strconv.Itoa(i%8)
		got, err := log.AppendFacts(ctx, eventlog.Aggregate{Tenant: "acme", Session: s, Kind: "session", ID: s}, warning(strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		heads[log.PartitionOfPosition(got[0].Sequence)] = got[0].Sequence
	}
	for _, head := range heads {
		if _, err := projector.WaitFor(ctx, log, store, "test.wait", head, 50*time.Second); err != nil {
			t.Fatalf("the reactor did not reach %d: %v", head, err)
		}
	}
	w.mu.Lock()
	if len(w.behind) > 0 {
		t.Errorf("reactions waited for the read model until their waits ran out %d times: %v", len(w.behind), w.behind[0])
	}
	w.mu.Unlock()
	stop()
	for range 2 {
		<-done
	}
}

package projector_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// seen appends every event's code to one document: a double application
// or a skipped event shows in the document.
type seen struct{ filters []string }

func (seen) Name() string        { return "test.seen" }
func (s seen) Filters() []string { return s.filters }
func (seen) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	cur, err := store.Get(ctx, "seen")
	if err != nil && err != projection.ErrNotFound {
		return projection.Batch{}, err
	}
	next := string(cur) + rec.Event.GetRuntimeWarning().GetCode() + ","
	return projection.Batch{Puts: []projection.KV{{Key: "seen", Value: []byte(next)}}}, nil
}

func TestProjectorResumesFromItsCheckpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mine := eventlog.Aggregate{Tenant: "acme", Session: "sess_1", Kind: "session", ID: "sess_1"}
	other := eventlog.Aggregate{Tenant: "acme", Session: "sess_2", Kind: "session", ID: "sess_2"}
	appendN := func(from, to int) {
		for i := from; i < to; i++ {
			for _, a := range []eventlog.Aggregate{mine, other} {
				ev := &eventsv1.RuntimeEvent{Type: "runtime.warning", Payload: &eventsv1.RuntimeEvent_RuntimeWarning{
					RuntimeWarning: &eventsv1.RuntimeWarning{Code: a.ID + "-" + strconv.Itoa(i)}}}
				if _, err := log.Append(ctx, a, eventlog.Any, ev); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	store := projection.NewMemory()
	p := seen{filters: []string{log.Subjects.Session("acme", "sess_1")}}
	run := func() (stop func()) {
		rctx, rcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { _ = projector.Run(rctx, log, store, p, nil); close(done) }()
		return func() { rcancel(); <-done }
	}

	appendN(0, 5)
	stop := run()
	mineSoFar := readAll(t, ctx, log, p.filters[0])
	if _, err := projector.WaitFor(ctx, log, store, p.Name(), mineSoFar[len(mineSoFar)-1].Event.GetSequence(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	stop()
	appendN(5, 10)
	stop = run()
	defer stop()
	mineSoFar = readAll(t, ctx, log, p.filters[0])
	if _, err := projector.WaitFor(ctx, log, store, p.Name(), mineSoFar[len(mineSoFar)-1].Event.GetSequence(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	got, _ := store.Get(ctx, "seen")
	want := ""
	for i := 0; i < 10; i++ {
		want += "sess_1-" + strconv.Itoa(i) + ","
	}
	if string(got) != want {
		t.Fatalf("projected %q\nwant      %q", got, want)
	}
	// WaitFor beyond the head gives up with ErrBehind.
	head, _ := log.Head(ctx)
	if _, err := projector.WaitFor(ctx, log, store, p.Name(), head+100, 20*time.Millisecond); err == nil {
		t.Fatal("WaitFor past the head returned without error")
	}
}

// counter reacts to warnings whose code it wants, counting them in memory.
type counterReactor struct {
	filters []string
	seen    chan string
}

func (counterReactor) Name() string        { return "test.reactor" }
func (c counterReactor) Filters() []string { return c.filters }
func (counterReactor) Wants(ev *eventsv1.RuntimeEvent) bool {
	return ev.GetRuntimeWarning().GetCode() != "skip"
}
func (c counterReactor) React(_ context.Context, rec *eventlog.Record) error {
	c.seen <- rec.Event.GetRuntimeWarning().GetCode()
	return nil
}

func TestReactorResumesAfterItsLastReaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	agg := eventlog.Aggregate{Tenant: "acme", Session: "sess_1", Kind: "session", ID: "sess_1"}
	add := func(code string) {
		ev := &eventsv1.RuntimeEvent{Type: "runtime.warning", Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: code}}}
		if _, err := log.Append(ctx, agg, eventlog.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	store := projection.NewMemory()
	r := counterReactor{seen: make(chan string, 16)}
	run := func() func() {
		rctx, rcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { _ = projector.React(rctx, log, store, r, nil); close(done) }()
		return func() { rcancel(); <-done }
	}
	add("a")
	add("skip")
	add("b")
	stop := run()
	if got := <-r.seen + <-r.seen; got != "ab" {
		t.Fatalf("reacted to %q", got)
	}
	if _, err := store.WaitFor(ctx, r.Name(), 3); err != nil {
		t.Fatal(err)
	}
	stop()
	add("c")
	stop = run()
	defer stop()
	// After the restart only the new event: nothing reacted to twice.
	if got := <-r.seen; got != "c" {
		t.Fatalf("after restart reacted to %q first", got)
	}
	select {
	case extra := <-r.seen:
		t.Fatalf("reacted again to %q", extra)
	default:
	}
}

// An idle projector whose store lost its data (a FLUSHALL, a failover to
// an empty replica) notices without a new event and rebuilds from the log.
func TestIdleProjectorRebuildsAWipedStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	agg := eventlog.Aggregate{Tenant: "acme", Session: "sess_1", Kind: "session", ID: "sess_1"}
	want := ""
	for i := range 5 {
		code := "sess_1-" + strconv.Itoa(i)
		want += code + ","
		if _, err := log.Append(ctx, agg, eventlog.Any, &eventsv1.RuntimeEvent{Type: "runtime.warning", Payload: &eventsv1.RuntimeEvent_RuntimeWarning{
			RuntimeWarning: &eventsv1.RuntimeWarning{Code: code}}}); err != nil {
			t.Fatal(err)
		}
	}
	store := projection.NewMemory()
	p := seen{}
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = projector.Run(rctx, log, store, p, nil); close(done) }()
	defer func() { rcancel(); <-done }()
	head, _ := log.Head(ctx)
	if _, err := projector.WaitFor(ctx, log, store, p.Name(), head, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := store.Reset(ctx); err != nil { // the wipe; no event follows
		t.Fatal(err)
	}
	if _, err := projector.WaitFor(ctx, log, store, p.Name(), head, 10*time.Second); err != nil {
		t.Fatalf("the wiped store was not rebuilt: %v", err)
	}
	if got, _ := store.Get(ctx, "seen"); string(got) != want {
		t.Fatalf("rebuilt %q, want %q", got, want)
	}
}

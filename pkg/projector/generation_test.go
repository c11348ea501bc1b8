package projector_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

// An upgrade waits for what the projection reads, not for the head: a
// filtered projection on a log of two partitions whose last events it does
// not read is caught up once it has applied every event of its own in
// each partition. Until its projector has, the generation is not
// activated; once it has, it is, and the generation before it still
// answers.
func TestUpgradeWaitsForWhatAFilteredProjectionReads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for i := range 5 {
		for _, s := range []string{"sess_1", "sess_2"} {
			code := s + "-" + strconv.Itoa(i)
			ev := &eventsv1.RuntimeEvent{Type: "runtime.warning", Payload: &eventsv1.RuntimeEvent_RuntimeWarning{
				RuntimeWarning: &eventsv1.RuntimeWarning{Code: code}}}
			if _, err := log.Append(ctx, eventlog.Aggregate{Tenant: "acme", Session: s, Kind: "session", ID: s}, eventlog.Any, ev); err != nil {
				t.Fatal(err)
			}
			if s == "sess_1" {
				want += code + ","
			}
		}
	}
	p := seen{filters: []string{log.Subjects.Session("acme", "sess_1")}}
	rdb := redistest.Client(t)
	ns := "upgrade-" + rand.Text()
	store := func(version int) *projection.Redis {
		s := projection.NewRedisGeneration(rdb, ns, projection.NewGeneration(projection.Fold{Name: p.Name(), Version: version}))
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	build := func(s *projection.Redis) *projector.Upgrade {
		u, err := projector.StartUpgrade(ctx, log, s, []projector.Projection{p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !u.Rebuilding() {
			t.Fatalf("generation %s on a log of events it never folded: not rebuilding", s.Generation())
		}
		return u
	}
	fold := func(s *projection.Redis, opts ...projector.Option) {
		rctx, rcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { _ = projector.Run(rctx, log, s, p, nil, opts...); close(done) }()
		t.Cleanup(func() { rcancel(); <-done })
	}
	answers := func(s *projection.Redis) {
		t.Helper()
		got, err := s.Get(ctx, "seen")
		if err != nil || string(got) != want {
			t.Fatalf("generation %s answers %q, %v; want %q", s.Generation(), got, err, want)
		}
	}

	v1 := store(1)
	u1 := build(v1)
	// Nothing folds v1 yet: it cannot be caught up.
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = u1.Run(wctx)
	wcancel()
	if !errors.Is(err, context.DeadlineExceeded) || !u1.Rebuilding() {
		t.Fatalf("Run with no projector folding: %v, rebuilding %v; want it still waiting", err, u1.Rebuilding())
	}
	if active, _ := v1.ActiveGeneration(ctx); active == v1.Generation().ID {
		t.Fatal("a generation nothing folded became active")
	}
	fold(v1)
	if err := u1.Run(ctx); err != nil {
		t.Fatal(err)
	}
	answers(v1)
	if active, _ := v1.ActiveGeneration(ctx); active != v1.Generation().ID {
		t.Fatalf("active %s, want %s", active, v1.Generation().ID)
	}

	v2 := store(2)
	u2 := build(v2)
	fold(v2, u2.Options()...)
	if err := u2.Run(ctx); err != nil {
		t.Fatal(err)
	}
	answers(v2)
	answers(v1)
	if active, _ := v2.ActiveGeneration(ctx); active != v2.Generation().ID {
		t.Fatalf("active %s, want %s", active, v2.Generation().ID)
	}
	if u2.Head() < 10 {
		t.Fatalf("rebuild head %d: below the 10 events of both partitions, each at a position of its own", u2.Head())
	}
	// Progress is reported after the batch is written: it may trail the
	// checkpoint Run waited for by a moment.
	testkit.Eventually(t, "the rebuild's progress counts sess_1's 5 events", func() bool { return u2.Folded() == 5 })
}

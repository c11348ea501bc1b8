package eventlog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// On a log of two partitions, each tenant keeps at most its share of each
// partition: tenant acme appends 40 events of 1 KiB to one session
// against a share of 8 KiB and loses its oldest ones, down to no less
// than 31/32 of the share; tenant globex's events, older than all of
// acme's, stay. FirstOf says from where acme's events in that partition
// are whole, and globex's partition reads from its start.
func TestEachTenantKeepsItsShareOfEachPartition(t *testing.T) {
	log := openPartitioned(t, natstest.Connect(t, natstest.Server(t)), 2)
	ctx := testkit.Context(t)
	kctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	const share = 8 << 10
	go func() { done <- log.KeepTenants(kctx, share, nil) }()
	t.Cleanup(func() { stop(); <-done })

	appendN := func(tenant, session string, n int) {
		t.Helper()
		agg := eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "thread", ID: "th"}
		for i := range n {
			ev := &eventsv1.RuntimeEvent{Type: "model.delta", ThreadId: "th", TurnId: "turn_1", Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: fmt.Sprint(i, strings.Repeat("x", 1<<10))}}}
			if _, err := log.AppendFacts(ctx, agg, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN("globex", "g1", 4)
	appendN("acme", "a1", 40)

	count := func(tenant, session string) (n int, bytes int) {
		t.Helper()
		view := log.Of(tenant, session)
		if _, err := view.Read(ctx, []string{view.Subjects.Session(tenant, session)}, eventlog.FromStart, func(r *eventlog.Record) error {
			n++
			bytes += len(r.Event.GetModelDelta().GetText())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n, bytes
	}
	testkit.Eventually(t, "acme's events beyond its share discarded", func() bool {
		n, _ := count("acme", "a1")
		return n < 10
	})
	if n, bytes := count("acme", "a1"); n < 7 || bytes < share*31/32-1<<10 {
		t.Fatalf("acme keeps %d events (%d bytes of text), want at least 31/32 of its %d byte share", n, bytes, share)
	}
	if n, _ := count("globex", "g1"); n != 4 {
		t.Fatalf("globex keeps %d of its 4 events", n)
	}

	acme := log.Of("acme", "a1")
	floor, err := acme.FirstOf(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	first := uint64(0)
	if _, err := acme.Read(ctx, []string{acme.Subjects.Session("acme", "a1")}, eventlog.FromStart, func(r *eventlog.Record) error {
		if first == 0 {
			first = r.Event.GetSequence()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if floor <= 1 || floor > first {
		t.Fatalf("acme's FirstOf %d, want past the start and no later than its first kept event %d", floor, first)
	}
	g := log.Of("globex", "g1")
	gfirst, _, err := g.Bounds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := g.FirstOf(ctx, "globex"); err != nil || got != gfirst {
		t.Fatalf("globex's FirstOf %d, %v: want its partition's first %d", got, err, gfirst)
	}
}

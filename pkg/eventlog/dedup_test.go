package eventlog_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// The stream's de-duplication window is shared by every tenant of a
// partition, and event ids can be chosen (reported facts) or derived
// (commands): an event id another tenant used first must not make an
// append a "duplicate" that lands nothing. Each append path lands the
// second tenant's events; a retry on the same aggregate is still a
// duplicate.
func TestEventIdsDeduplicateOnlyOnTheirOwnAggregate(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	victim := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "thread", ID: "th1"}
	attacker := eventlog.Aggregate{Tenant: "globex", Session: "s1", Kind: "thread", ID: "th1"}
	sibling := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "turn", ID: "turn_1"}
	withID := func(id string) *eventsv1.RuntimeEvent {
		ev := warning(id)
		ev.EventId = id
		return ev
	}
	paths := []struct {
		name   string
		append func(agg eventlog.Aggregate, expect uint64, ids ...string) ([]eventlog.Appended, error)
	}{
		{"Append", func(agg eventlog.Aggregate, expect uint64, ids ...string) ([]eventlog.Appended, error) {
			return log.Append(ctx, agg, eventlog.ExpectSequence(expect), withID(ids[0]))
		}},
		{"AppendAny", func(agg eventlog.Aggregate, _ uint64, ids ...string) ([]eventlog.Appended, error) {
			return log.Append(ctx, agg, eventlog.Any, withID(ids[0]))
		}},
		{"AppendFacts", func(agg eventlog.Aggregate, _ uint64, ids ...string) ([]eventlog.Appended, error) {
			return log.AppendFacts(ctx, agg, withID(ids[0]), withID(ids[1]))
		}},
		{"AppendBatch", func(agg eventlog.Aggregate, _ uint64, ids ...string) ([]eventlog.Appended, error) {
			res, err := log.AppendBatch(ctx, []eventlog.Entry{{Aggregate: agg, Expect: eventlog.Any, Event: withID(ids[0])}})
			if err != nil {
				return nil, err
			}
			return []eventlog.Appended{res[0].Appended}, res[0].Err
		}},
		{"AppendAtomic", func(agg eventlog.Aggregate, expect uint64, ids ...string) ([]eventlog.Appended, error) {
			return log.AppendAtomic(ctx, agg, eventlog.ExpectSequence(expect), withID(ids[0]), withID(ids[1]))
		}},
	}
	for i, p := range paths {
		ids := []string{fmt.Sprintf("evt_shared_%d_a", i), fmt.Sprintf("evt_shared_%d_b", i)}
		last := func(agg eventlog.Aggregate) uint64 {
			seq, err := log.LastSequence(ctx, agg)
			if err != nil {
				t.Fatal(err)
			}
			return seq
		}
		// The other tenant, then the victim's sibling aggregate, use the ids first.
		for _, first := range []eventlog.Aggregate{attacker, sibling} {
			if _, err := p.append(first, last(first), ids...); err != nil {
				t.Fatalf("%s on %s: %v", p.name, first, err)
			}
		}
		before := last(victim)
		got, err := p.append(victim, before, ids...)
		if err != nil {
			t.Fatalf("%s on %s after other aggregates used its ids: %v", p.name, victim, err)
		}
		for _, a := range got {
			if a.Duplicate || a.Sequence <= before {
				t.Fatalf("%s: %+v taken for a duplicate of another aggregate's event", p.name, a)
			}
		}
		if after := last(victim); after != got[len(got)-1].Sequence {
			t.Fatalf("%s: victim's aggregate at %d, want %d", p.name, after, got[len(got)-1].Sequence)
		}
		// A retry on the victim's own aggregate still lands nothing.
		again, err := p.append(victim, before, ids...)
		switch {
		case p.name == "AppendAtomic":
			if !errors.Is(err, eventlog.ErrConflict) {
				t.Fatalf("%s retry: %v, want a conflict (the batch is in the log)", p.name, err)
			}
		case err != nil:
			t.Fatalf("%s retry: %v", p.name, err)
		default:
			for j, a := range again {
				if !a.Duplicate || a.Sequence != got[j].Sequence {
					t.Fatalf("%s retry = %+v, want duplicate of %+v", p.name, a, got[j])
				}
			}
		}
		if n := last(victim); n != got[len(got)-1].Sequence {
			t.Fatalf("%s retry appended: head %d", p.name, n)
		}
	}
	// Every event is in the log once per aggregate, with the id it was given.
	count := map[string]int{}
	for _, ev := range readAll(t, log) {
		count[ev.GetEventId()]++
	}
	for i := range paths {
		for _, s := range []string{"a", "b"} {
			id := fmt.Sprintf("evt_shared_%d_%s", i, s)
			if n := count[id]; n != 0 && n != 3 {
				t.Fatalf("%s is in the log %d times, want 3 (one per aggregate)", id, n)
			}
		}
	}
}

package eventlog_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

func withID(ev *eventsv1.RuntimeEvent, id string) *eventsv1.RuntimeEvent {
	ev.EventId = id
	return ev
}

func TestAppendAtomicLandsWholeOrNothing(t *testing.T) {
	for name, slots := range map[string]int{"command message": 0, "atomic batch (a log made with one slot)": 1} {
		t.Run(name, func(t *testing.T) {
			nc := natstest.Connect(t, natstest.Server(t))
			log, err := eventlog.Open(context.Background(), nc, eventlog.Config{RuntimeID: "rt_test", Slots: slots})
			if err != nil {
				t.Fatal(err)
			}
			ctx := testkit.Context(t)
			got, err := log.AppendAtomic(ctx, agg, eventlog.ExpectSequence(0), withID(warning("a"), "evt_a"), withID(warning("b"), "evt_b"), withID(warning("c"), "evt_c"))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 || got[1].EventID != "evt_b" || got[0].Sequence+1 != got[1].Sequence || got[1].Sequence+1 != got[2].Sequence {
				t.Fatalf("appended %+v, want evt_a..c at consecutive positions", got)
			}
			last, err := log.LastSequence(ctx, agg)
			if err != nil || last != got[2].Sequence {
				t.Fatalf("LastSequence = %d, %v; want the command's last event's %d", last, err, got[2].Sequence)
			}
			// A stale expectation refuses the whole command: nothing of it lands.
			if _, err := log.AppendAtomic(ctx, agg, eventlog.ExpectSequence(got[0].Sequence), withID(warning("d"), "evt_d"), withID(warning("e"), "evt_e")); !errors.Is(err, eventlog.ErrConflict) {
				t.Fatalf("stale expectation: %v, want ErrConflict", err)
			}
			// A retried command whose events are there is a conflict to reload
			// on, and appends nothing twice, with or without an expectation.
			for _, expect := range []eventlog.Expect{eventlog.ExpectSequence(last), eventlog.Any} {
				if _, err := log.AppendAtomic(ctx, agg, expect, withID(warning("a"), "evt_a"), withID(warning("b"), "evt_b"), withID(warning("c"), "evt_c")); !errors.Is(err, eventlog.ErrConflict) {
					t.Fatalf("retried command: %v, want ErrConflict", err)
				}
			}
			evs := readAll(t, log, log.Subjects.Aggregate(agg))
			if len(evs) != 3 {
				t.Fatalf("the log holds %d events, want 3: %v", len(evs), evs)
			}
			// The next command expects the last event's position.
			next, err := log.AppendAtomic(ctx, agg, eventlog.ExpectSequence(last), withID(warning("f"), "evt_f"), withID(warning("g"), "evt_g"))
			if err != nil || next[0].Sequence <= last {
				t.Fatalf("next command: %+v, %v", next, err)
			}
		})
	}
}

// A command of several events is one message of the stream: one publish,
// nothing staged, and read back as its events at their own positions,
// from any position inside it.
func TestACommandIsOneMessageReadAsItsEvents(t *testing.T) {
	log, nc := openLog(t)
	ctx := testkit.Context(t)
	if _, err := log.Append(ctx, agg, eventlog.ExpectSequence(0), withID(warning("0"), "evt_0")); err != nil {
		t.Fatal(err)
	}
	cmd, err := log.AppendAtomic(ctx, agg, eventlog.Any, withID(warning("a"), "evt_a"), withID(warning("b"), "evt_b"), withID(warning("c"), "evt_c"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, "AGENTRUNTIME")
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Fatalf("the stream holds %d messages, want 2 (an event, a command)", info.State.Msgs)
	}
	// Every way of reading starts inside the command where asked.
	for _, from := range []uint64{cmd[0].Sequence, cmd[1].Sequence, cmd[2].Sequence, cmd[2].Sequence + 1} {
		var want []string
		for _, a := range cmd {
			if a.Sequence >= from {
				want = append(want, a.EventID)
			}
		}
		var read []string
		if _, err := log.Read(ctx, nil, eventlog.FromSequence(from), func(r *eventlog.Record) error {
			read = append(read, r.Event.GetEventId())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		recs, err := log.History(ctx, log.Subjects.All(), from, 10)
		if err != nil {
			t.Fatal(err)
		}
		var history []string
		for _, r := range recs {
			history = append(history, r.Event.GetEventId())
		}
		var agg0 []string
		if _, err := log.ReadAggregate(ctx, agg, from-1, func(r *eventlog.Record) error {
			agg0 = append(agg0, r.Event.GetEventId())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var live []string
		if len(want) > 0 {
			sub, err := log.Subscribe(ctx, nil, eventlog.FromSequence(from))
			if err != nil {
				t.Fatal(err)
			}
			for range want {
				r, err := sub.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				live = append(live, r.Event.GetEventId())
			}
			sub.Stop()
		}
		for what, got := range map[string][]string{"Read": read, "History": history, "ReadAggregate": agg0, "Subscribe": live} {
			if !equal(got, want) {
				t.Errorf("%s from %d: %v, want %v", what, from, got, want)
			}
		}
	}
	// A page of history ends inside a command; the next page goes on there.
	page, err := log.History(ctx, log.Subjects.All(), 0, 2)
	if err != nil || len(page) != 2 || page[1].Event.GetEventId() != "evt_a" {
		t.Fatalf("first page: %v, %v", page, err)
	}
	page, err = log.History(ctx, log.Subjects.All(), page[1].Event.GetSequence()+1, 2)
	if err != nil || len(page) != 2 || page[0].Event.GetEventId() != "evt_b" || page[1].Event.GetEventId() != "evt_c" {
		t.Fatalf("second page: %v, %v", page, err)
	}
	_, head, err := log.Bounds(ctx)
	if err != nil || head != cmd[2].Sequence {
		t.Fatalf("head %d (%v), want the command's last event at %d", head, err, cmd[2].Sequence)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A log made with one slot per message keeps it when opened by a binary
// whose default is more: its positions do not change meaning.
func TestALogKeepsTheSlotsItWasMadeWith(t *testing.T) {
	nc := natstest.Connect(t, natstest.Server(t))
	ctx := testkit.Context(t)
	old, err := eventlog.Open(ctx, nc, eventlog.Config{RuntimeID: "rt_old", Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	first, err := old.Append(ctx, agg, eventlog.ExpectSequence(0), warning("old"))
	if err != nil || first[0].Sequence != 1 {
		t.Fatalf("old log: %+v, %v", first, err)
	}
	reopened, err := eventlog.Open(ctx, nc, eventlog.Config{RuntimeID: "rt_new"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := reopened.AppendAtomic(ctx, agg, eventlog.ExpectSequence(1), warning("x"), warning("y"))
	if err != nil || got[0].Sequence != 2 || got[1].Sequence != 3 {
		t.Fatalf("reopened log: %+v, %v; want positions 2 and 3 as before", got, err)
	}
}

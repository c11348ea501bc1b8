package eventlog_test

import (
	"errors"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

func withID(ev *eventsv1.RuntimeEvent, id string) *eventsv1.RuntimeEvent {
	ev.EventId = id
	return ev
}

func TestAppendAtomicLandsWholeOrNothing(t *testing.T) {
	log, _ := openLog(t)
	ctx := testkit.Context(t)
	got, err := log.AppendAtomic(ctx, agg, eventlog.ExpectSequence(0), withID(warning("a"), "evt_a"), withID(warning("b"), "evt_b"), withID(warning("c"), "evt_c"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Sequence != 1 || got[2].Sequence != 3 || got[1].EventID != "evt_b" {
		t.Fatalf("appended %+v, want evt_a..c at 1..3", got)
	}
	// A stale expectation refuses the whole batch: nothing of it lands.
	if _, err := log.AppendAtomic(ctx, agg, eventlog.ExpectSequence(1), withID(warning("d"), "evt_d"), withID(warning("e"), "evt_e")); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("stale expectation: %v, want ErrConflict", err)
	}
	// A retried command whose events are there is a conflict to reload on,
	// and appends nothing twice.
	if _, err := log.AppendAtomic(ctx, agg, eventlog.ExpectSequence(3), withID(warning("b"), "evt_b"), withID(warning("c"), "evt_c")); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("retried batch: %v, want ErrConflict", err)
	}
	if _, err := log.AppendAtomic(ctx, agg, eventlog.ExpectSequence(3), withID(warning("x"), "evt_x"), withID(warning("c"), "evt_c")); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("batch with one retried event: %v, want ErrConflict", err)
	}
	evs := readAll(t, log, log.Subjects.Aggregate(agg))
	if len(evs) != 3 {
		t.Fatalf("the log holds %d events, want 3: %v", len(evs), evs)
	}
}

package control_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// A command's event ids are derivable (command.DeriveID of its aggregate
// and key) and a worker's reported facts keep the ids it sends; the log's
// de-duplication window is shared by the tenants of a partition. Tenant
// globex reports, ahead of time, facts carrying the ids of acme's next
// SubmitTurn (by idempotency key and by turn id): acme's submits still
// land, the turns are on acme's thread, and globex's retried report is
// still de-duplicated.
func TestAnotherTenantsReportedIdsCannotSwallowACommand(t *testing.T) {
	h := newHarnessOf(t, 1, func(*harness) {}) // one stream: one shared window
	a, g := acme(t), globex(t)
	first := h.submit(a, "s1", "th1")
	thread := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "thread", ID: "th1"}

	// globex's own turn, whose worker reports acme's next ids.
	own := h.submit(g, "s9", "th9").Turn
	h.report(g, started(own.TurnId))
	var forged []*eventsv1.RuntimeEvent
	for _, key := range []string{"submit:key:next", "submit:turn:turn_next"} {
		for n := range 4 {
			ev := delta(own.TurnId, fmt.Sprintf("%s/%d", key, n))
			ev.EventId = command.DeriveID(thread, key, n)
			forged = append(forged, ev)
		}
	}
	rep := h.report(g, forged...)
	if again := h.report(g, forged...); again.Sequence != rep.Sequence || !slices.Equal(again.EventIds, rep.EventIds) {
		t.Fatalf("globex's retried report = %v, want the first answer %v", again, rep)
	}

	byKey, err := h.client.SubmitTurn(a, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("next"), IdempotencyKey: "next"})
	if err != nil {
		t.Fatalf("acme's SubmitTurn by key after globex used its ids: %v", err)
	}
	byID, err := h.client.SubmitTurn(a, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("next"), TurnId: "turn_next"})
	if err != nil {
		t.Fatalf("acme's SubmitTurn by turn id after globex used its ids: %v", err)
	}
	if byKey.Deduplicated || byID.Deduplicated || byID.Turn.GetTurnId() != "turn_next" {
		t.Fatalf("acme's submits answered %v and %v, want two new turns", byKey, byID)
	}
	th := h.threadRead(a, "s1", "th1", byID.Sequence)
	for _, id := range []string{byKey.Turn.GetTurnId(), byID.Turn.GetTurnId()} {
		if th.ActiveTurnId != id && !slices.Contains(th.QueuedTurnIds, id) {
			t.Fatalf("acme's turn %s is not on its thread: active %s, queued %v (first %s)", id, th.ActiveTurnId, th.QueuedTurnIds, first.Turn.GetTurnId())
		}
	}
	// The submitted facts are in acme's thread with the derived ids.
	want := map[string]bool{command.DeriveID(thread, "submit:key:next", 0): false, command.DeriveID(thread, "submit:turn:turn_next", 0): false}
	if err := h.readLog(a, []string{h.log.Subjects.Aggregate(thread)}, func(r *eventlog.Record) error {
		if _, ok := want[r.Event.GetEventId()]; ok && r.Event.GetTenantId() == "acme" && r.Event.GetType() == "turn.submitted" {
			want[r.Event.GetEventId()] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for id, found := range want {
		if !found {
			t.Fatalf("acme's turn.submitted %s is not in its thread's log", id)
		}
	}
}

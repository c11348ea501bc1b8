package main

import (
	"fmt"
	"strings"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// The real binary with a tiny retention (--log-max-bytes 48KiB): once a
// session's first events are gone, a subscription from sequence 1 gets the
// thread's snapshot, then snapshot.repaired marking the lost range, then
// the live stream.
func TestDevWithTinyRetentionRepairsAStaleCursor(t *testing.T) {
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker", "--log-max-bytes", "48KiB")
	client := controlv1.NewControlServiceClient(dial(t, dev.Addr))
	ctx := testkit.Context(t)
	sub, err := client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1",
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}})
	if err != nil {
		t.Fatal(err)
	}
	turn := sub.GetTurn().GetTurnId()
	report := func(evs ...*eventsv1.RuntimeEvent) uint64 {
		t.Helper()
		resp, err := client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetSequence()
	}
	report(&eventsv1.RuntimeEvent{Type: "turn.started", TurnId: turn, Payload: &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: "w1"}}})
	big := strings.Repeat("x", 4<<10)
	var last uint64
	for i := range 16 {
		last = report(&eventsv1.RuntimeEvent{Type: "model.delta", TurnId: turn, Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: fmt.Sprint(i, big)}}})
	}
	if _, err := client.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: "s1", ThreadId: "th1", MinSequence: last}); err != nil {
		t.Fatal(err)
	}

	stream, err := client.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", ThreadId: "th1",
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if err != nil {
		t.Fatal(err)
	}
	recv := func() *controlv1.SubscribeEventsResponse {
		t.Helper()
		for {
			m, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if m.GetHeartbeat() == nil {
				return m
			}
		}
	}
	snap := recv().GetSnapshot()
	if snap.GetThread().GetActiveTurnId() != turn || snap.GetSequence() < last {
		t.Fatalf("first item %v, want the thread's snapshot", snap)
	}
	rep := recv().GetEvent()
	if rep.GetType() != "snapshot.repaired" || rep.GetSnapshotRepaired().GetRequestedSequence() != 1 || rep.GetSnapshotRepaired().GetFirstAvailableSequence() <= 1 {
		t.Fatalf("second item %v, want snapshot.repaired from 1", rep)
	}
	after := report(&eventsv1.RuntimeEvent{Type: "model.delta", TurnId: turn, Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: "after"}}})
	for {
		ev := recv().GetEvent()
		if ev.GetSequence() <= snap.GetSequence() || ev.GetEventId() == rep.GetEventId() {
			t.Fatalf("after the repair: %v", ev)
		}
		if ev.GetSequence() == after {
			return
		}
	}
}

package security

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// On a log capped at 1 MiB (--log-max-bytes) with a share of 64 KiB per
// tenant (--log-tenant-max-bytes), tenant globex writes a little history,
// then tenant acme floods 1.5 MiB of submits through the real binary. The
// cap alone would discard the oldest events, globex's; with the shares,
// acme loses only its own oldest: globex's session still reads from its
// first event, while a subscription to acme's first session from the
// start is told its history is gone (snapshot, then snapshot.repaired).
func TestAFloodingTenantDiscardsOnlyItsOwnHistory(t *testing.T) {
	control, _, as := runtimeWithAuthFile(t, authFile(t), "--log-max-bytes", "1MiB", "--log-tenant-max-bytes", "64KiB")
	acme, globex := as(acmeOperator), as(globexOperator)
	var globexTurns []string
	for i := range 3 {
		sub, err := control.SubmitTurn(globex, &controlv1.SubmitTurnRequest{SessionId: "g1", ThreadId: "gth1", Input: text(fmt.Sprint("globex's work ", i))})
		if err != nil {
			t.Fatal(err)
		}
		globexTurns = append(globexTurns, sub.GetTurn().GetTurnId())
	}
	big := strings.Repeat("x", 4<<10)
	for i := range 384 {
		s := fmt.Sprint("flood-", i)
		if _, err := control.SubmitTurn(acme, &controlv1.SubmitTurnRequest{SessionId: s, ThreadId: "th-" + s, Input: text(big)}); err != nil {
			t.Fatalf("acme's submit %d: %v", i, err)
		}
	}

	first := func(ctx context.Context, session string) (grpc.ServerStreamingClient[controlv1.SubscribeEventsResponse], *controlv1.SubscribeEventsResponse) {
		t.Helper()
		stream, err := control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: session, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
		if err != nil {
			t.Fatal(err)
		}
		for {
			m, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if m.GetHeartbeat() == nil {
				return stream, m
			}
		}
	}

	// globex's history is whole: its first item is its first event, and
	// every turn it submitted follows.
	stream, m := first(globex, "g1")
	if m.GetEvent() == nil || m.GetEvent().GetType() == "snapshot.repaired" {
		t.Fatalf("globex's session from its start begins with %v, want its first event: acme's flood discarded globex's history", m)
	}
	submitted := map[string]bool{}
	for ev := m.GetEvent(); len(submitted) < len(globexTurns); {
		if ev.GetType() == "turn.submitted" {
			submitted[ev.GetTurnId()] = true
		}
		next, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		ev = next.GetEvent()
	}

	// acme's own oldest are gone, and a reader is told so.
	stream, m = first(acme, "flood-0")
	if m.GetSnapshot() == nil {
		t.Fatalf("acme's first session from its start begins with %v, want a snapshot: its events should be gone", m)
	}
	rep, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if rep.GetEvent().GetType() != "snapshot.repaired" || rep.GetEvent().GetSnapshotRepaired().GetFirstAvailableSequence() <= 1 {
		t.Fatalf("after acme's snapshot: %v, want snapshot.repaired past sequence 1", rep)
	}
}

package control_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// The control service on a log of three partitions
// (docs/adr/0013-partitions-of-the-log.md, the control items of
// docs/partitions.md). Each test picks its sessions by the partition their
// events land in (sessionIn), never by luck.

// newPartitioned is a harness on a log of three partitions.
func newPartitioned(t *testing.T, opt func(*harness)) *harness {
	t.Helper()
	if opt == nil {
		opt = func(*harness) {}
	}
	return newHarnessOf(t, 3, opt)
}

// sessionIn is the first session id "<prefix>-<i>" of tenant whose events
// land in partition k of h's log.
func (h *harness) sessionIn(tenant string, k int, prefix string) string {
	for i := 0; ; i++ {
		if s := fmt.Sprintf("%s-%d", prefix, i); h.log.Subjects.PartitionOf(tenant, s) == k {
			return s
		}
	}
}

// appendFact appends ev on an aggregate of acme's session, as the service
// that owns the fact (or another replica whose checks passed) would, and
// returns its position.
func (h *harness) appendFact(session, kind, id string, ev *eventsv1.RuntimeEvent) uint64 {
	h.t.Helper()
	res, err := h.log.Append(context.Background(), eventlog.Aggregate{Tenant: "acme", Session: session, Kind: kind, ID: id}, eventlog.Any, ev)
	if err != nil {
		h.t.Fatalf("append %s: %v", ev.GetType(), err)
	}
	return res[len(res)-1].Sequence
}

// sessionHead is the last position of the partition of acme's session.
func (h *harness) sessionHead(session string) uint64 {
	h.t.Helper()
	head, err := h.log.Of("acme", session).Head(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return head
}

// GS-3: a read by id that misses waits for the read model to hold every
// partition's head (the session's, when the read names it) before it
// answers NotFound; an id just written is found.
func TestLookupsByIDWaitForEveryPartition(t *testing.T) {
	h := newPartitioned(t, nil)
	ctx := acme(t)
	s := h.sessionIn("acme", 1, "look")
	tu := h.submit(ctx, s, "th1").Turn
	_, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act_none", Decision: "a"})
	assertCode(t, err, codes.NotFound, "act_none")
	_, err = h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: "turn_none", RunId: "run_none", LeaseToken: "x"})
	assertCode(t, err, codes.NotFound, "turn_none")
	_, err = h.client.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: s, ThreadId: "th_none"})
	assertCode(t, err, codes.NotFound, "th_none")
	_, err = h.client.ResumeSubagent(ctx, &controlv1.ResumeSubagentRequest{SessionId: s, SubagentId: "sub_none"})
	assertCode(t, err, codes.NotFound, "sub_none")

	// Commands answer before the read model folds; a respond right after
	// a request finds the action.
	if _, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: s, ThreadId: "th1", TurnId: tu.TurnId, ActionId: "act_1",
		ActionType: "input", Decisions: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act_1", Decision: "a"}); err != nil || r.GetAction().GetDecision() != "a" {
		t.Fatalf("respond right after the request: %v %v", r, err)
	}
}

// GS-5: reads of one session answer how far the read model has applied
// the session's partition, with or without min_sequence.
func TestSessionReadsAnswerTheirPartitionsSequence(t *testing.T) {
	h := newPartitioned(t, nil)
	ctx := acme(t)
	s := h.sessionIn("acme", 2, "read")
	sub := h.submit(ctx, s, "th1")
	h.threadRead(ctx, s, "th1", sub.Sequence)
	check := func(what string, seq uint64, err error) {
		t.Helper()
		if err != nil || seq < sub.Sequence || h.log.PartitionOfPosition(seq) != 2 {
			t.Fatalf("%s: sequence %d (%v), want a position of partition 2 at or after %d", what, seq, err, sub.Sequence)
		}
	}
	gs, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: s})
	check("GetSession", gs.GetSequence(), err)
	gt, err := h.client.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: s, ThreadId: "th1"})
	check("GetThreadRead", gt.GetSequence(), err)
	ls, err := h.client.ListSubagents(ctx, &controlv1.ListSubagentsRequest{SessionId: s, ThreadId: "th1"})
	check("ListSubagents", ls.GetSequence(), err)
	at, err := h.client.GetTurnAttempts(ctx, &controlv1.GetTurnAttemptsRequest{TurnId: sub.Turn.TurnId})
	check("GetTurnAttempts", at.GetSequence(), err)
}

// GS-6: an ack is a position of the channel's session's partition, at
// most its head.
func TestAcksAreCheckedAgainstTheSessionsPartition(t *testing.T) {
	h := newPartitioned(t, nil)
	ctx := acme(t)
	s := h.sessionIn("acme", 1, "chan")
	sub := h.submit(ctx, s, "th1")
	if _, err := h.client.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{SessionId: s, ChannelId: "chan_1"}); err != nil {
		t.Fatal(err)
	}
	ack, err := h.client.AckEvents(ctx, &controlv1.AckEventsRequest{SessionId: s, ChannelId: "chan_1", Sequence: sub.Sequence})
	if err != nil || ack.GetChannel().GetLastAckedSequence() != sub.Sequence {
		t.Fatalf("ack of the session's event: %v %v", ack, err)
	}
	head := h.sessionHead(s)
	_, err = h.client.AckEvents(ctx, &controlv1.AckEventsRequest{SessionId: s, ChannelId: "chan_1", Sequence: head + 3})
	assertCode(t, err, codes.InvalidArgument, "sequence")
	_, err = h.client.AckEvents(ctx, &controlv1.AckEventsRequest{SessionId: s, ChannelId: "chan_1", Sequence: sub.Sequence + 1})
	assertCode(t, err, codes.InvalidArgument, "sequence")
}

package control_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// A thread's queue is bounded: a submit beyond the bound is
// ResourceExhausted QUEUE_FULL naming the bound and the thread, and appends
// nothing; once the queue moves on, submits queue again.
func TestSubmitBeyondTheQueueBoundIsRefused(t *testing.T) {
	h := newHarnessWith(t, func(h *harness) { h.maxQueuedTurns = 3 })
	ctx := acme(t)
	active := h.submit(ctx, "s1", "th1").Turn
	var last uint64
	for range 3 {
		last = h.submit(ctx, "s1", "th1").Sequence
	}
	head := h.heads(ctx)
	_, err := h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", TurnId: "turn-over-the-bound", Input: text("one too many")})
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("submit beyond the bound: %v, want ResourceExhausted", err)
	}
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			info = i
		}
	}
	if md := info.GetMetadata(); info.GetReason() != "QUEUE_FULL" || md["max_queued_turns"] != "3" || md["queued_turns"] != "3" || md["thread_id"] != "th1" {
		t.Fatalf("ErrorInfo %v, want QUEUE_FULL naming the bound 3 and thread th1 (message %q)", info, st.Message())
	}
	if after := h.heads(ctx); !slices.Equal(after, head) {
		t.Fatalf("the refused submit appended: heads %d -> %d", head, after)
	}
	if th := h.threadRead(ctx, "s1", "th1", last); len(th.QueuedTurnIds) != 3 || slices.Contains(th.QueuedTurnIds, "turn-over-the-bound") {
		t.Fatalf("queue after the refusal: %v", th.QueuedTurnIds)
	}
	sess, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: "s1", MinSequence: last})
	if err != nil {
		t.Fatal(err)
	}
	for _, tu := range sess.History {
		if tu.TurnId == "turn-over-the-bound" {
			t.Fatalf("the refused turn is in the session's history: %v", tu)
		}
	}

	h.report(ctx, completed(active.TurnId)) // the front becomes active: room for one
	again, err := h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", TurnId: "turn-over-the-bound", Input: text("now it fits")})
	if err != nil {
		t.Fatalf("submit once the queue moved on: %v", err)
	}
	if th := h.threadRead(ctx, "s1", "th1", again.Sequence); len(th.QueuedTurnIds) != 3 || th.QueuedTurnIds[2] != "turn-over-the-bound" {
		t.Fatalf("queue %v, want 3 turns ending with the new one", th.QueuedTurnIds)
	}
}

// queueFollower follows a thread's queue as a client does: from a
// snapshot's queue, folding each queue.changed after it, and checks that
// every delta's position and queue length agree with what it folded.
type queueFollower struct {
	t     *testing.T
	sub   *subscription
	queue []string
	seen  uint64
}

func (h *harness) followQueue(t *testing.T, ctx context.Context, session, thread string) *queueFollower {
	t.Helper()
	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: session, ThreadId: thread, Start: controlv1.StartFrom_START_FROM_SNAPSHOT})
	snap := sub.next().GetSnapshot()
	if snap == nil {
		t.Fatal("a snapshot-first subscription did not start with a snapshot")
	}
	return &queueFollower{t: t, sub: sub, queue: slices.Clone(snap.GetThread().GetQueuedTurnIds()), seen: snap.GetSequence()}
}

// to folds the events up to seq and returns the queue then.
func (f *queueFollower) to(seq uint64) []string {
	f.t.Helper()
	for f.seen < seq {
		ev := f.sub.next().GetEvent()
		if ev == nil {
			continue
		}
		f.seen = ev.GetSequence()
		q := ev.GetQueueChanged()
		if q == nil {
			continue
		}
		f.queue = events.FoldQueue(f.queue, q)
		if int(q.GetQueueLength()) != len(f.queue) {
			f.t.Fatalf("%s %s: queue_length %d, the folded queue has %d", q.GetChange(), q.GetTurnId(), q.GetQueueLength(), len(f.queue))
		}
		if i := slices.Index(f.queue, q.GetTurnId()); i >= 0 && int(q.GetPosition()) != i {
			f.t.Fatalf("%s %s: position %d, the folded queue has it at %d", q.GetChange(), q.GetTurnId(), q.GetPosition(), i)
		}
	}
	return f.queue
}

// queue.changed carries the change, not the queue: a client that folds the
// deltas, from the start of the thread or from a snapshot taken midway,
// holds the same queue as the read model after every enqueue, promote,
// remove, dequeue and interrupt that cancels the queue.
func TestQueueDeltasFoldToTheReadModel(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	t1 := h.submit(ctx, "s1", "th1").Turn
	fromStart := h.followQueue(t, ctx, "s1", "th1")
	followers := []*queueFollower{fromStart}
	check := func(step string, seq uint64, answered []string) {
		t.Helper()
		th := h.threadRead(ctx, "s1", "th1", seq)
		for i, f := range followers {
			if got := f.to(seq); !slices.Equal(got, th.QueuedTurnIds) {
				t.Fatalf("%s: follower %d folded %v, the read model holds %v", step, i, got, th.QueuedTurnIds)
			}
		}
		if answered != nil && !slices.Equal(answered, th.QueuedTurnIds) {
			t.Fatalf("%s: the command answered %v, the read model holds %v", step, answered, th.QueuedTurnIds)
		}
	}
	var queued []string
	for range 4 {
		r := h.submit(ctx, "s1", "th1")
		queued = append(queued, r.Turn.TurnId)
		check("enqueue", r.Sequence, nil)
	}
	pr, err := h.client.PromoteQueuedTurn(ctx, &controlv1.PromoteQueuedTurnRequest{SessionId: "s1", ThreadId: "th1", QueuedTurnId: queued[2]})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{queued[2], queued[0], queued[1], queued[3]}; !slices.Equal(pr.QueuedTurnIds, want) {
		t.Fatalf("promote answered %v, want %v", pr.QueuedTurnIds, want)
	}
	check("promote", pr.Sequence, pr.QueuedTurnIds)

	// A client that starts here, from a snapshot, follows the same queue.
	followers = append(followers, h.followQueue(t, ctx, "s1", "th1"))
	rm, err := h.client.RemoveQueuedTurn(ctx, &controlv1.RemoveQueuedTurnRequest{SessionId: "s1", ThreadId: "th1", QueuedTurnId: queued[1]})
	if err != nil {
		t.Fatal(err)
	}
	check("remove", rm.Sequence, rm.QueuedTurnIds)
	done := h.report(ctx, completed(t1.TurnId)) // the front (queued[2]) becomes active
	check("dequeue", done.Sequence, []string{queued[0], queued[3]})
	in, err := h.client.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "th1", QueuePolicy: controlv1.QueuePolicy_QUEUE_POLICY_CANCEL, Reason: "stop"})
	if err != nil || !in.Accepted {
		t.Fatalf("interrupt: %v %v", in, err)
	}
	check("interrupt cancelling the queue", in.Sequence, []string{})
}

// queue.changed stays small as the queue grows: its size does not depend
// on the queue's length (it carried the whole queue before: 34,805 bytes
// for one event at about 1,000 queued turns).
func TestQueueChangedStaysSmallAsTheQueueGrows(t *testing.T) {
	const queued = 250
	h := newHarnessOn(t, true)
	ctx := acme(t)
	h.submit(ctx, "s1", "th1")
	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"queue.changed"}})
	for range queued {
		h.submit(ctx, "s1", "th1")
	}
	var first, largest *eventsv1.RuntimeEvent
	var largestPayload *eventsv1.QueueChanged
	for i := range queued {
		ev := sub.until("queue.changed")
		if got := ev.GetQueueChanged().GetQueueLength(); got != uint32(i+1) {
			t.Fatalf("enqueue %d: queue_length %d", i+1, got)
		}
		if first == nil {
			first = ev
		}
		if largest == nil || proto.Size(ev) > proto.Size(largest) {
			largest = ev
		}
		if largestPayload == nil || proto.Size(ev.GetQueueChanged()) > proto.Size(largestPayload) {
			largestPayload = ev.GetQueueChanged()
		}
	}
	// The payload grows only by the varints of position and length (a byte
	// each from 128 on; the turn ids are of one length); the envelope
	// around it also by its sequence and timestamp varints. Carrying the
	// queue, the last of these events would hold 250 turn ids: over 7 KB.
	if grew := proto.Size(largestPayload) - proto.Size(first.GetQueueChanged()); grew > 2 {
		t.Fatalf("the queue.changed payload grew by %d bytes from queue length 1 to %d: %v", grew, largestPayload.GetQueueLength(), largestPayload)
	}
	if n := proto.Size(largest); n > 512 {
		t.Fatalf("a queue.changed of %d bytes at queue length %d: %v", n, largest.GetQueueChanged().GetQueueLength(), largest)
	}
	t.Logf("queue.changed: %d bytes at queue length 1, at most %d bytes up to %d", proto.Size(first), proto.Size(largest), queued)
}

package control_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// consumers is the number of JetStream consumers on the event stream.
func (h *harness) consumers() int {
	h.t.Helper()
	js, err := jetstream.New(natstest.Connect(h.t, h.nats))
	if err != nil {
		h.t.Fatal(err)
	}
	names := []string{"AGENTRUNTIME"}
	if p := h.log.Partitions(); p > 1 {
		names = names[:0]
		for k := range p {
			names = append(names, fmt.Sprintf("AGENTRUNTIME_%d", k))
		}
	}
	n := 0
	for _, name := range names {
		s, err := js.Stream(context.Background(), name)
		if err != nil {
			h.t.Fatal(err)
		}
		info, err := s.Info(context.Background())
		if err != nil {
			h.t.Fatal(err)
		}
		n += info.State.Consumers
	}
	return n
}

// clients opens n connections to the service: many streams share each,
// as browsers and SDKs multiplex theirs.
func (h *harness) clients(n int) []controlv1.ControlServiceClient {
	h.t.Helper()
	out := make([]controlv1.ControlServiceClient, n)
	for i := range out {
		conn, err := grpc.NewClient(h.addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			h.t.Fatal(err)
		}
		h.t.Cleanup(func() { conn.Close() })
		out[i] = controlv1.NewControlServiceClient(conn)
	}
	return out
}

// Thousands of subscriptions, opened together from now, from a sequence
// and from a snapshot, and closed again, never change the number of
// JetStream consumers: the process's hub holds the one they share.
func TestSubscriptionsDoNotAddJetStreamConsumers(t *testing.T) {
	h := newHarnessOn(t, true)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	r := h.report(ctx, started(tu.TurnId))
	h.threadRead(ctx, "s1", "th1", r.Sequence)
	h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1"}) // starts the hub
	baseline := h.consumers()

	const n = 2000
	clients := h.clients(4)
	cctx, cancel := context.WithCancel(ctx)
	var opened, closed sync.WaitGroup
	errs := make(chan error, n)
	got := make(chan struct{}, n)
	for i := range n {
		opened.Add(1)
		closed.Add(1)
		go func() {
			defer closed.Done()
			req := &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"model.delta"}}
			switch i % 3 {
			case 1:
				req.Start, req.FromSequence = controlv1.StartFrom_START_FROM_SEQUENCE, 1
			case 2:
				req.Start, req.ThreadId = controlv1.StartFrom_START_FROM_SNAPSHOT, "th1"
			}
			stream, err := clients[i%len(clients)].SubscribeEvents(cctx, req)
			if err == nil {
				// Heartbeat (now, sequence) or snapshot: the stream is open.
				_, err = stream.Recv()
			}
			opened.Done()
			if err != nil {
				errs <- err
				return
			}
			for {
				m, err := stream.Recv()
				if err != nil {
					return
				}
				if m.GetEvent().GetModelDelta().GetText() == "to all" {
					got <- struct{}{}
				}
			}
		}()
	}
	opened.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A consumer per subscription would add 2,000. The rest of the service
	// may hold a transient consumer of its own meanwhile (a projector that
	// restarted leaves its old ordered consumer until the server reaps it, a
	// read holds one while it runs): a few, never a number that follows n.
	const transient = 3
	if c := h.consumers(); c > baseline+transient {
		t.Fatalf("%d consumers with %d subscriptions open, want at most %d as with one (+%d transient)", c, n, baseline, transient)
	}
	// All of them are live.
	h.report(ctx, delta(tu.TurnId, "to all"))
	for range n {
		<-got
	}
	cancel()
	closed.Wait()
	if c := h.consumers(); c > baseline+transient {
		t.Fatalf("%d consumers after closing %d subscriptions, want at most %d (+%d transient)", c, n, baseline, transient)
	}
}

// A tiny retention removes the start of a session from the log. A
// subscription (or a channel's resumption) from a cursor before the log's
// first sequence gets the snapshot first, then a snapshot.repaired fact
// that marks the removed range unavailable and the active turn stale, then
// the live stream, without a gap or a duplicate. A tenant-wide subscription
// has no snapshot and is told the gap.
func TestCursorOlderThanRetentionGetsSnapshotThenRepairThenLive(t *testing.T) {
	h := newHarnessWith(t, func(h *harness) {
		h.memory = true
		var err error
		h.log, err = eventlog.Open(context.Background(), natstest.Connect(h.t, h.nats), eventlog.Config{MaxBytes: 48 << 10, Partitions: natstest.Partitions(t)})
		if err != nil {
			t.Fatal(err)
		}
	})
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, started(tu.TurnId))
	rc, err := h.client.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{ChannelId: "chan_1", SessionId: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.AckEvents(ctx, &controlv1.AckEventsRequest{ChannelId: "chan_1", SessionId: "s1", Sequence: rc.Sequence}); err != nil {
		t.Fatal(err)
	}
	// 4 KiB deltas push the session's first events out of 48 KiB.
	big := strings.Repeat("x", 4<<10)
	var last uint64
	for i := range 16 {
		last = h.report(ctx, delta(tu.TurnId, fmt.Sprint(i, big))).Sequence
	}
	h.threadRead(ctx, "s1", "th1", last)
	first, _, err := h.log.Of("acme", "s1").Bounds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first <= rc.Sequence+1 {
		t.Fatalf("retention removed nothing: first sequence %d", first)
	}

	// The channel resumes after its last ack, which the log no longer has.
	rc, err = h.client.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{ChannelId: "chan_1", SessionId: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", ThreadId: "th1", ChannelId: "chan_1",
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: rc.ResumeFromSequence})
	snap := sub.next().GetSnapshot()
	if snap == nil || snap.Thread.GetActiveTurnId() != tu.TurnId || snap.Sequence < last {
		t.Fatalf("first item: %v, want the thread's snapshot covering %d", snap, last)
	}
	rep := sub.next().GetEvent()
	fact := rep.GetSnapshotRepaired()
	if rep.GetType() != "snapshot.repaired" || rep.GetChannelId() != "chan_1" || fact.GetRequestedSequence() != rc.ResumeFromSequence ||
		fact.GetFirstAvailableSequence() < first || fact.GetSnapshotSequence() != snap.Sequence || rep.Sequence <= snap.Sequence {
		t.Fatalf("second item: %v, want snapshot.repaired of the gap", rep)
	}
	marks := map[string]*eventsv1.RepairedFact{}
	for _, f := range fact.GetFacts() {
		marks[f.GetStatus()+" "+f.GetKind()+" "+f.GetId()] = f
	}
	if f := marks["unavailable events "]; f == nil || f.FromSequence != rc.ResumeFromSequence || f.ToSequence != fact.GetFirstAvailableSequence()-1 {
		t.Fatalf("no unavailable range %d..: %v", rc.ResumeFromSequence, fact.GetFacts())
	}
	if marks["stale turn "+tu.TurnId] == nil {
		t.Fatalf("the running turn is not marked stale: %v", fact.GetFacts())
	}
	// Then live: the next delta, and not the repair again.
	after := h.report(ctx, delta(tu.TurnId, "after")).Sequence
	for {
		ev := sub.next().GetEvent()
		if ev.GetEventId() == rep.GetEventId() || ev.Sequence <= snap.Sequence {
			t.Fatalf("after the repair: %v", ev)
		}
		if ev.Sequence == after {
			break
		}
	}
	// The repair is on record in the log.
	var logged bool
	if _, err := h.log.Read(ctx, []string{h.log.Subjects.Session("acme", "s1")}, eventlog.FromSequence(rep.Sequence), func(r *eventlog.Record) error {
		logged = logged || r.Event.GetEventId() == rep.GetEventId()
		return nil
	}); err != nil || !logged {
		t.Fatalf("snapshot.repaired not in the log: %v", err)
	}

	// Tenant-wide: a gap item per partition that lost events (s1's among
	// them), then events from the first retained ones.
	tenant := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	k := h.log.Subjects.PartitionOf("acme", "s1")
	var gap *controlv1.Gap
	item := tenant.next()
	for ; item.GetGap() != nil; item = tenant.next() {
		if g := item.GetGap(); h.log.PartitionOfPosition(g.GetFirstAvailableSequence()) == k {
			gap = g
		}
	}
	if gap.GetRequestedSequence() != h.log.Position(k, 1) || gap.GetFirstAvailableSequence() < first {
		t.Fatalf("tenant-wide from 1: %v, want a gap of s1's partition up to %d", gap, first)
	}
	if ev := item.GetEvent(); h.log.PartitionOfPosition(ev.Sequence) == k && ev.Sequence < gap.GetFirstAvailableSequence() {
		t.Fatalf("after the gap: %v", ev)
	}
}

// addr is the listener the harness's client dials.
func (h *harness) addr() string {
	return h.listenAddr
}

// When the service stops, its subscriptions end with Unavailable and the
// cursor to resume from, which loses nothing on the next instance.
func TestShutdownEndsSubscriptionsWithAResumableCursor(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, started(tu.TurnId))
	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"model.delta"}})
	seen := h.report(ctx, delta(tu.TurnId, "before")).Sequence
	if ev := sub.next().GetEvent(); ev.Sequence != seen {
		t.Fatalf("got %v, want the delta at %d", ev, seen)
	}
	h.restart(false)
	var err error
	for err == nil {
		_, err = sub.stream.Recv()
	}
	assertCode(t, err, codes.Unavailable, "resume_from_sequence")
	if !containsDetail(status.Convert(err), fmt.Sprint(seen+1)) {
		t.Fatalf("%v: no cursor %d", err, seen+1)
	}
	after := h.report(ctx, delta(tu.TurnId, "after")).Sequence
	again := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"model.delta"},
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: seen + 1})
	if ev := again.next().GetEvent(); ev.Sequence != after {
		t.Fatalf("resumed at %v, want the delta at %d", ev, after)
	}
}

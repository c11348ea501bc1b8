package control_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// newPartitionedStreamHarness is the harness on a log of cfg.Partitions
// streams (ADR 0013).
func newPartitionedStreamHarness(t testing.TB, cfg eventlog.Config) *harness {
	t.Helper()
	srv := natstest.Server(t)
	log, err := eventlog.Open(context.Background(), natstest.Connect(t, srv), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, nats: srv, log: log, namespace: "control-test-" + ids.New("ns")}
	h.start(nil)
	t.Cleanup(func() { h.stop() })
	return h
}

// sessionPerPartition names a session of tenant in each partition of the
// harness's log, by its hash.
func (h *harness) sessionPerPartition(tenant string) []string {
	out := make([]string, h.log.Partitions())
	for i, found := 0, 0; found < len(out); i++ {
		s := fmt.Sprint("s", i)
		if k := h.log.Subjects.PartitionOf(tenant, s); out[k] == "" {
			out[k], found = s, found+1
		}
	}
	return out
}

// runningTurns submits a turn in thread "th-<session>" of each session (a
// thread id is the tenant's) and starts it: the turns deltas are reported
// on.
func (h *harness) runningTurns(ctx context.Context, sessions []string) map[string]string {
	turns := map[string]string{}
	for _, s := range sessions {
		tu := h.submit(ctx, s, "th-"+s).Turn
		h.report(ctx, in(s, started(tu.TurnId)))
		turns[s] = tu.TurnId
	}
	return turns
}

// in places a reported fact in its session and thread, as workers do: the
// service does not look the turn up.
func in(session string, ev *eventsv1.RuntimeEvent) *eventsv1.RuntimeEvent {
	ev.SessionId, ev.ThreadId = session, "th-"+session
	return ev
}

// deltas reports rounds of model deltas, session k getting k+1 per round,
// so that the partitions' positions interleave out of order; it adds each
// one's sequence to want, by session.
func (h *harness) deltas(ctx context.Context, sessions []string, turns map[string]string, rounds int, want map[string][]uint64) int {
	n := 0
	for r := range rounds {
		for k, s := range sessions {
			for i := range k + 1 {
				want[s] = append(want[s], h.report(ctx, in(s, delta(turns[s], fmt.Sprint(r, ".", i)))).Sequence)
				n++
			}
		}
	}
	return n
}

// bySession groups delivered deltas by session, in delivery order, and
// says which were delivered twice.
func bySession(evs []*controlv1.SubscribeEventsResponse) (map[string][]uint64, []uint64) {
	out := map[string][]uint64{}
	seen := map[uint64]bool{}
	var twice []uint64
	for _, m := range evs {
		ev := m.GetEvent()
		if seen[ev.Sequence] {
			twice = append(twice, ev.Sequence)
		}
		seen[ev.Sequence] = true
		out[ev.SessionId] = append(out[ev.SessionId], ev.Sequence)
	}
	return out, twice
}

// events reads n events, each with a cursor when the subscription is
// across sessions. A subscription that stays idle for five heartbeats
// before that has lost events: the test says which it got.
func (s *subscription) events(n int, cursors bool) []*controlv1.SubscribeEventsResponse {
	s.t.Helper()
	var out []*controlv1.SubscribeEventsResponse
	for idle := 0; len(out) < n; {
		m, err := s.stream.Recv()
		if err != nil {
			s.t.Fatalf("subscription: %v after %d of %d events", err, len(out), n)
		}
		if m.GetHeartbeat() != nil {
			if idle++; idle == 5 {
				g, _ := bySession(out)
				s.t.Fatalf("idle after %d of %d events: %v", len(out), n, g)
			}
			continue
		}
		idle = 0
		if m.GetEvent() == nil {
			s.t.Fatalf("got %v, want an event", m)
		}
		if cursors != (m.GetCursor() != "") {
			s.t.Fatalf("event %d with cursor %q", m.GetEvent().GetSequence(), m.GetCursor())
		}
		out = append(out, m)
	}
	return out
}

// beat is the heartbeat of the tests' subscriptions: events (above)
// gives up after five.
var beat = durationpb.New(time.Second)

// subscribeErr is the error a subscription is refused with, before it
// sends anything.
func (h *harness) subscribeErr(ctx context.Context, req *controlv1.SubscribeEventsRequest) error {
	h.t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := h.client.SubscribeEvents(ctx, req)
	if err != nil {
		return err
	}
	m, err := stream.Recv()
	if err == nil {
		return fmt.Errorf("the subscription started: %v", m)
	}
	return err
}

// GS-1, GS-2 at P = 3: a tenant-wide subscription over sessions in all
// three partitions gets every event exactly once, each session in order,
// from now or from the start. Cut after some events of the replay (in the
// middle of what the hub read at once) and resumed with the last cursor
// received, the union of both is every event exactly once. A bad cursor,
// or a single sequence across partitions, is InvalidArgument naming the
// field.
func TestTenantWideSubscriptionAcrossPartitionsResumesByCursor(t *testing.T) {
	h := newPartitionedStreamHarness(t, eventlog.Config{Partitions: 3})
	ctx := acme(t)
	sessions := h.sessionPerPartition("acme")
	turns := h.runningTurns(ctx, sessions)
	deltas := []string{"model.delta"}
	live := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{Heartbeat: beat, TypePrefixes: deltas})
	want := map[string][]uint64{}
	n := h.deltas(ctx, sessions, turns, 4, want)

	from := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{Heartbeat: beat, TypePrefixes: deltas, Start: controlv1.StartFrom_START_FROM_SEQUENCE})
	got := from.events(n/3, true)
	from.cancel()
	n += h.deltas(ctx, sessions, turns, 3, want)
	resumed := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{Heartbeat: beat, TypePrefixes: deltas, ResumeCursor: got[len(got)-1].GetCursor()})
	got = append(got, resumed.events(n-len(got), true)...)
	if g, twice := bySession(got); fmt.Sprint(g) != fmt.Sprint(want) || twice != nil {
		t.Fatalf("from the start, cut and resumed by cursor: %d events (twice: %v), want %d\n got %v\nwant %v", len(got), twice, n, g, want)
	}
	all := live.events(n, true)
	if g, twice := bySession(all); fmt.Sprint(g) != fmt.Sprint(want) || twice != nil {
		t.Fatalf("from now: %d events (twice: %v), want %d\n got %v\nwant %v", len(all), twice, n, g, want)
	}

	cursor := all[len(all)-1].GetCursor()
	for name, req := range map[string]*controlv1.SubscribeEventsRequest{
		"not a cursor":            {ResumeCursor: "v1:!!"},
		"of one partition":        {ResumeCursor: "v1:BQ"},
		"on a session":            {SessionId: sessions[0], ResumeCursor: cursor},
		"beside a sequence":       {ResumeCursor: cursor, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 4},
		"beside a start from now": {ResumeCursor: cursor, Start: controlv1.StartFrom_START_FROM_NOW},
	} {
		t.Run(name, func(t *testing.T) {
			assertCode(t, h.subscribeErr(ctx, req), codes.InvalidArgument, "resume_cursor")
		})
	}
	err := h.subscribeErr(ctx, &controlv1.SubscribeEventsRequest{Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: got[0].GetEvent().GetSequence()})
	assertCode(t, err, codes.InvalidArgument, "from_sequence")
	assertCode(t, err, codes.InvalidArgument, "resume_cursor")
}

// GS-2 at P = 3: a session's subscription reads its partition. From a
// sequence it gets the session's events in order and none of the others',
// and cut, resumes from the sequence after the last one it got; a
// snapshot-first one covers the session's partition's checkpoint, so only
// what follows the snapshot comes after it.
func TestSessionSubscriptionOfAPartitionResumesBySequence(t *testing.T) {
	h := newPartitionedStreamHarness(t, eventlog.Config{Partitions: 3})
	ctx := acme(t)
	sessions := h.sessionPerPartition("acme")
	turns := h.runningTurns(ctx, sessions)
	want := map[string][]uint64{}
	h.deltas(ctx, sessions, turns, 3, want)
	s := sessions[2]
	deltas := []string{"model.delta"}

	first := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{Heartbeat: beat, SessionId: s, TypePrefixes: deltas, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	got := first.events(4, false)
	first.cancel()
	h.deltas(ctx, sessions, turns, 2, want)
	last := got[len(got)-1].GetEvent().GetSequence()
	again := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{Heartbeat: beat, SessionId: s, TypePrefixes: deltas, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: last + 1})
	got = append(got, again.events(len(want[s])-len(got), false)...)
	if g, twice := bySession(got); fmt.Sprint(g) != fmt.Sprint(map[string][]uint64{s: want[s]}) || twice != nil {
		t.Fatalf("session %s (partition 2) from 1, cut and resumed from %d: %v (twice: %v), want %v", s, last+1, g, twice, want[s])
	}

	end := want[s][len(want[s])-1]
	h.threadRead(ctx, s, "th-"+s, end)
	snap := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{Heartbeat: beat, SessionId: s, ThreadId: "th-" + s, TypePrefixes: deltas, Start: controlv1.StartFrom_START_FROM_SNAPSHOT})
	sn := snap.next().GetSnapshot()
	if sn.GetSequence() < end || h.log.PartitionOfPosition(sn.GetSequence()) != 2 {
		t.Fatalf("snapshot covers %d, want at least %d, of partition 2", sn.GetSequence(), end)
	}
	after := h.report(ctx, in(s, delta(turns[s], "after"))).Sequence
	if ev := snap.events(1, false)[0].GetEvent(); ev.Sequence != after {
		t.Fatalf("after the snapshot: %d, want %d (only what follows it)", ev.Sequence, after)
	}
}

// GS-2 at P = 3 with retention: the first events of one partition are
// gone. A tenant-wide subscription from the start is told that partition's
// gap, in its positions, and gets every retained event of each partition,
// the others whole. A session of that partition resuming right after an
// event retention removed (the sequence after it is of no partition) has
// lost nothing and gets no repair.
func TestGapsAcrossPartitionsArePerPartition(t *testing.T) {
	h := newPartitionedStreamHarness(t, eventlog.Config{Partitions: 3, MaxBytes: 48 << 10})
	ctx := acme(t)
	sessions := h.sessionPerPartition("acme")
	turns := h.runningTurns(ctx, sessions)
	want := map[string][]uint64{}
	h.deltas(ctx, sessions, turns, 2, want)
	// 4 KiB deltas push partition 1's first events out of its 48 KiB.
	big := sessions[1]
	for i := range 16 {
		want[big] = append(want[big], h.report(ctx, in(big, delta(turns[big], fmt.Sprint(i, strings.Repeat("x", 4<<10))))).Sequence)
	}
	first, _, err := h.log.Partition(1).Bounds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first <= want[big][0] {
		t.Fatalf("retention removed none of partition 1's deltas: first position %d", first)
	}
	n := 0
	for s, seqs := range want {
		if s == big {
			want[s] = slices.DeleteFunc(seqs, func(seq uint64) bool { return seq < first })
		}
		n += len(want[s])
	}

	from := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{Heartbeat: beat, TypePrefixes: []string{"model.delta"}, Start: controlv1.StartFrom_START_FROM_SEQUENCE})
	gap := from.next().GetGap()
	if gap.GetRequestedSequence() != h.log.Position(1, 1) || gap.GetFirstAvailableSequence() != first {
		t.Fatalf("first item %v, want partition 1's gap from %d to %d", gap, h.log.Position(1, 1), first)
	}
	if g, twice := bySession(from.events(n, true)); fmt.Sprint(g) != fmt.Sprint(want) || twice != nil {
		t.Fatalf("after the gap: %v (twice: %v), want %v", g, twice, want)
	}

	// The event before the first retained one was seen: resume after it.
	after := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{Heartbeat: beat, SessionId: big, TypePrefixes: []string{"model.delta"},
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: first - 3 + 1})
	if m := after.next(); m.GetEvent().GetSequence() != want[big][0] {
		t.Fatalf("session %s resumed after %d: %v, want its first retained delta %d", big, first-3, m, want[big][0])
	}
}

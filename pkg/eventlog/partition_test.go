package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

func openPartitioned(t testing.TB, nc *nats.Conn, p int) *eventlog.Log {
	t.Helper()
	log, err := eventlog.Open(testkit.Context(t), nc, eventlog.Config{RuntimeID: "rt_test", Partitions: p})
	if err != nil {
		t.Fatal(err)
	}
	return log
}

func TestPartitionSubjects(t *testing.T) {
	one := eventlog.Subjects{Prefix: "ar.ev"}
	a := eventlog.Aggregate{Tenant: "acme", Session: "sess_1", Kind: "thread", ID: "thr_1"}
	if got := one.Aggregate(a); got != "ar.ev.acme.sess_1.thread.thr_1" {
		t.Fatalf("one partition: subject %q: the subjects of an unpartitioned log must not change", got)
	}
	three := eventlog.Subjects{Prefix: "ar.ev", Partitions: 3}
	k := three.PartitionOf("acme", "sess_1")
	want := fmt.Sprintf("ar.ev.p%d.acme.sess_1.thread.thr_1", k)
	if got := three.Aggregate(a); got != want {
		t.Fatalf("subject %q, want %q", got, want)
	}
	if got := three.Session("acme", "sess_1"); got != fmt.Sprintf("ar.ev.p%d.acme.sess_1.>", k) {
		t.Fatalf("session filter %q", got)
	}
	if got := three.Tenant("acme"); got != "ar.ev.*.acme.>" {
		t.Fatalf("tenant filter across partitions %q", got)
	}
	if got := three.Partition(2).Kind("*", "task"); got != "ar.ev.p2.*.*.task.*" {
		t.Fatalf("kind filter of partition 2 %q", got)
	}
	tenant, session, ok := three.Scope(want)
	if !ok || tenant != "acme" || session != "sess_1" {
		t.Fatalf("scope of %q: %q %q %v", want, tenant, session, ok)
	}
	// Sessions spread: 300 sessions leave no partition empty.
	seen := map[int]int{}
	for i := range 300 {
		seen[three.PartitionOf("acme", fmt.Sprintf("sess_%d", i))]++
	}
	for k := range 3 {
		if seen[k] < 50 {
			t.Fatalf("partition %d holds %d of 300 sessions: %v", k, seen[k], seen)
		}
	}
}

// TestPartitionedLog: with three partitions every session's events are in
// its own partition's stream, positions say which, and every operation of
// the log (conditional and atomic appends, reads of an aggregate, a
// session, a partition, subscriptions resumed from a position) behaves per
// partition as the one stream did.
func TestPartitionedLog(t *testing.T) {
	nc := natstest.Connect(t, natstest.Server(t))
	log := openPartitioned(t, nc, 3)
	ctx := testkit.Context(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	const sessions = 30
	last := map[string]uint64{} // session -> position of its last event
	for i := range sessions {
		s := fmt.Sprintf("sess_%d", i)
		a := eventlog.Aggregate{Tenant: "acme", Session: s, Kind: "thread", ID: "thr_" + s}
		k := log.Subjects.PartitionOf("acme", s)
		out, err := log.Append(ctx, a, eventlog.ExpectSequence(0), warning("first"))
		if err != nil {
			t.Fatal(err)
		}
		if got := log.PartitionOfPosition(out[0].Sequence); got != k {
			t.Fatalf("%s: position %d is of partition %d, the session's is %d", s, out[0].Sequence, got, k)
		}
		if at, err := log.LastSequence(ctx, a); err != nil || at != out[0].Sequence {
			t.Fatalf("%s: last sequence %d (%v), appended at %d", s, at, err, out[0].Sequence)
		}
		// A stale expectation conflicts; the current one holds, for an
		// atomic batch too, whose events land at consecutive positions of
		// the partition.
		if _, err := log.Append(ctx, a, eventlog.ExpectSequence(0), warning("stale")); !errors.Is(err, eventlog.ErrConflict) {
			t.Fatalf("%s: stale expectation: %v, want a conflict", s, err)
		}
		batch, err := log.AppendAtomic(ctx, a, eventlog.ExpectSequence(out[0].Sequence), warning("a"), warning("b"))
		if err != nil {
			t.Fatal(err)
		}
		if batch[1].Sequence != batch[0].Sequence+3 || log.PartitionOfPosition(batch[1].Sequence) != k {
			t.Fatalf("%s: atomic batch at %d and %d: not consecutive in partition %d", s, batch[0].Sequence, batch[1].Sequence, k)
		}
		var types []string
		if _, err := log.ReadAggregate(ctx, a, out[0].Sequence, func(r *eventlog.Record) error {
			types = append(types, r.Event.GetRuntimeWarning().GetCode())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(types, []string{"a", "b"}) {
			t.Fatalf("%s: read after the first event: %v", s, types)
		}
		last[s] = batch[1].Sequence
	}

	// Each stream holds exactly its sessions' events.
	total := 0
	for k := range 3 {
		stream, err := js.Stream(ctx, fmt.Sprintf("AGENTRUNTIME_%d", k))
		if err != nil {
			t.Fatalf("partition %d: %v", k, err)
		}
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			t.Fatalf("partition %d holds nothing: 30 sessions should spread over 3", k)
		}
		// A whole partition reads as one stream, each session in order.
		view := log.Partition(k)
		perSession := map[string][]uint64{}
		if _, err := view.Read(ctx, []string{log.Subjects.Tenant("acme")}, eventlog.FromStart, func(r *eventlog.Record) error {
			s := r.Event.GetSessionId()
			if log.Subjects.PartitionOf("acme", s) != k {
				t.Errorf("session %s read from partition %d", s, k)
			}
			perSession[s] = append(perSession[s], r.Event.GetSequence())
			total++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for s, seqs := range perSession {
			if len(seqs) != 3 || !slices.IsSorted(seqs) || seqs[2] != last[s] {
				t.Fatalf("partition %d, %s: positions %v, last appended %d", k, s, seqs, last[s])
			}
		}
		first, head, err := view.Bounds(ctx)
		if err != nil || view.PartitionOfPosition(first) != k || view.PartitionOfPosition(head) != k {
			t.Fatalf("partition %d bounds %d..%d (%v)", k, first, head, err)
		}
	}
	if total != 3*sessions {
		t.Fatalf("%d events in the streams, %d appended", total, 3*sessions)
	}

	// Reads that name a session go to its partition; reads across
	// partitions on the whole log are refused: they have no one order.
	if got := readAll(t, log, log.Subjects.Session("acme", "sess_7")); len(got) != 3 {
		t.Fatalf("session read: %d events", len(got))
	}
	if _, err := log.Read(ctx, []string{log.Subjects.Tenant("acme")}, eventlog.FromStart, func(*eventlog.Record) error { return nil }); !errors.Is(err, eventlog.ErrPartitioned) {
		t.Fatalf("tenant-wide read of the whole log: %v, want ErrPartitioned", err)
	}
	if _, _, err := log.Bounds(ctx); !errors.Is(err, eventlog.ErrPartitioned) {
		t.Fatalf("bounds of the whole log: %v, want ErrPartitioned", err)
	}

	// A subscription resumed after a position gets exactly what follows
	// it in the partition, for the whole partition and for one session.
	s := "sess_3"
	k := log.Subjects.PartitionOf("acme", s)
	a := eventlog.Aggregate{Tenant: "acme", Session: s, Kind: "thread", ID: "thr_" + s}
	if _, err := log.Append(ctx, a, eventlog.ExpectSequence(last[s]), warning("after")); err != nil {
		t.Fatal(err)
	}
	// The whole partition from there: later events of other sessions, then
	// this one, nothing at or before the position.
	view := log.Partition(k)
	sub, err := view.Subscribe(ctx, nil, eventlog.FromSequence(last[s]+1))
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p := rec.Event.GetSequence(); p <= last[s] || view.PartitionOfPosition(p) != k {
			t.Fatalf("resumed after %d in partition %d: got position %d", last[s], k, p)
		}
		if rec.Event.GetSessionId() == s {
			if rec.Event.GetRuntimeWarning().GetCode() != "after" {
				t.Fatalf("resumed after %d: %s's first event is %v", last[s], s, rec.Event)
			}
			break
		}
	}
	sub.Stop()
	// One session from there: exactly the event after.
	got := subscribeFirst(t, log, []string{log.Subjects.Session("acme", s)}, last[s]+1)
	if got.GetRuntimeWarning().GetCode() != "after" {
		t.Fatalf("session resumed after %d: first event %v", last[s], got)
	}
	for _, l := range []*eventlog.Log{log, view} {
		hist, err := l.History(ctx, log.Subjects.Session("acme", s), last[s]+1, 10)
		if err != nil || len(hist) != 1 || hist[0].Event.GetSequence() != got.GetSequence() {
			t.Fatalf("history after %d: %d records (%v)", last[s], len(hist), err)
		}
	}
}

func subscribeFirst(t *testing.T, log *eventlog.Log, filters []string, from uint64) *eventsv1.RuntimeEvent {
	t.Helper()
	sub, err := log.Subscribe(testkit.Context(t), filters, eventlog.FromSequence(from))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	rec, err := sub.Next(testkit.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	return rec.Event
}

// TestPartitionCountIsFixed: reopening a log with another partition count
// would look for sessions in the wrong streams; Open refuses it, naming
// both counts.
func TestPartitionCountIsFixed(t *testing.T) {
	for _, c := range []struct{ made, opened int }{{1, 3}, {3, 1}, {3, 2}, {2, 3}} {
		t.Run(fmt.Sprintf("%d_then_%d", c.made, c.opened), func(t *testing.T) {
			nc := natstest.Connect(t, natstest.Server(t))
			openPartitioned(t, nc, c.made)
			_, err := eventlog.Open(testkit.Context(t), nc, eventlog.Config{RuntimeID: "rt_test", Partitions: c.opened})
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("made with %d partition", c.made)) ||
				!strings.Contains(err.Error(), fmt.Sprintf("opened with %d", c.opened)) {
				t.Fatalf("made with %d, opened with %d: %v", c.made, c.opened, err)
			}
			// The same count opens again (every replica calls Open).
			openPartitioned(t, nc, c.made)
		})
	}
	if _, err := eventlog.Open(context.Background(), nil, eventlog.Config{Partitions: eventlog.MaxPartitions + 1}); err == nil {
		t.Fatal("a partition count above the maximum was accepted")
	}
}

package control_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// ListTurns is the tenant's turns across its sessions and the partitions
// they are in, newest first by submission time, paged with no gap and no
// repeat (turns of one millisecond included); another tenant's turns are
// never listed; a rolled-back turn leaves the list.
func TestTurnsAreListedNewestFirstAcrossPartitions(t *testing.T) {
	h := newPartitioned(t, nil)
	ctx := acme(t)
	// Partition 0 runs far ahead of the others by position: by position,
	// its turns would look newest.
	h.busy(t, 0)
	var newestFirst []string
	var oldest time.Time
	for k := range 3 {
		s := h.sessionIn("acme", k, "turns")
		for i := range 2 {
			sub := h.submit(ctx, s, "th-"+s+"-"+string(rune('a'+i)))
			if _, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: s, MinSequence: sub.Sequence}); err != nil {
				t.Fatal(err)
			}
			if oldest.IsZero() {
				oldest = sub.Turn.SubmittedAt.AsTime()
			}
			afterMillis(t, sub.Turn.SubmittedAt.AsTime())
			newestFirst = append([]string{sub.Turn.TurnId}, newestFirst...)
		}
	}
	// Three more turns, one per partition, submitted in one millisecond
	// before all of them: listed last, by id descending.
	same := timestamppb.New(oldest.Add(-time.Second).Truncate(time.Millisecond))
	var tied []string
	for k := range 3 {
		s := h.sessionIn("acme", k, "tie")
		id := "turn_tie_" + string(rune('a'+k))
		pos := h.appendFact(s, "turn", id, &eventsv1.RuntimeEvent{Type: "turn.submitted", Timestamp: same, TurnId: id, ThreadId: "th-" + s,
			Payload: &eventsv1.RuntimeEvent_TurnSubmitted{TurnSubmitted: &eventsv1.TurnSubmitted{Admission: "accepted"}}})
		if _, err := h.client.ListTurns(ctx, &controlv1.ListTurnsRequest{MinSequence: pos}); err != nil {
			t.Fatal(err)
		}
		tied = append(tied, id)
	}
	slices.Sort(tied)
	slices.Reverse(tied)
	want := append(slices.Clone(newestFirst), tied...)

	all, err := h.client.ListTurns(ctx, &controlv1.ListTurnsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := turnIDs(all.Turns); strings.Join(got, " ") != strings.Join(want, " ") || all.NextPageToken != "" || all.TotalSize != int64(len(want)) {
		t.Fatalf("turns %v (next %q, total %d), want %v", got, all.NextPageToken, all.TotalSize, want)
	}
	for _, tu := range all.Turns[:len(newestFirst)] {
		if tu.SessionId == "" || tu.ThreadId == "" || tu.SubmittedSequence == 0 {
			t.Fatalf("turn %v lacks where it is", tu)
		}
	}
	for _, size := range []int32{1, 2, 4} {
		var got []string
		token := ""
		for {
			page, err := h.client.ListTurns(ctx, &controlv1.ListTurnsRequest{PageSize: size, PageToken: token})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Turns) > int(size) || page.TotalSize != int64(len(want)) {
				t.Fatalf("a page of %d has %d turns, total %d", size, len(page.Turns), page.TotalSize)
			}
			got = append(got, turnIDs(page.Turns)...)
			if token = page.NextPageToken; token == "" || len(got) > len(want) {
				break
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("pages of %d: %v, want %v", size, got, want)
		}
	}

	// after_turn_id resumes after any listed turn, as a page ending there
	// would: tied turns and turns of other partitions included.
	for i, id := range want {
		page, err := h.client.ListTurns(ctx, &controlv1.ListTurnsRequest{PageSize: 500, AfterTurnId: id})
		if err != nil {
			t.Fatal(err)
		}
		if got := turnIDs(page.Turns); strings.Join(got, " ") != strings.Join(want[i+1:], " ") || page.NextPageToken != "" {
			t.Fatalf("after %s: %v, want %v", id, got, want[i+1:])
		}
	}
	_, err = h.client.ListTurns(ctx, &controlv1.ListTurnsRequest{AfterTurnId: want[0], PageToken: all.NextPageToken + "x"})
	assertCode(t, err, codes.InvalidArgument, "after_turn_id")

	// Another tenant sees its own turns only: the busy partition's 30.
	theirs, err := h.client.ListTurns(globex(t), &controlv1.ListTurnsRequest{PageSize: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(theirs.Turns) != 30 || theirs.TotalSize != 30 {
		t.Fatalf("globex lists %d turns (total %d), want its 30", len(theirs.Turns), theirs.TotalSize)
	}
	for _, tu := range theirs.Turns {
		if slices.Contains(want, tu.TurnId) {
			t.Fatalf("globex lists acme's turn %s", tu.TurnId)
		}
	}
	// An acme page token read by globex pages globex's index only.
	page, err := h.client.ListTurns(ctx, &controlv1.ListTurnsRequest{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	rest, err := h.client.ListTurns(globex(t), &controlv1.ListTurnsRequest{PageSize: 500, PageToken: page.NextPageToken})
	if err != nil {
		t.Fatal(err)
	}
	for _, tu := range rest.Turns {
		if slices.Contains(want, tu.TurnId) {
			t.Fatalf("globex lists acme's turn %s with acme's token", tu.TurnId)
		}
	}
	// acme's turn ids are no place in globex's list.
	_, err = h.client.ListTurns(globex(t), &controlv1.ListTurnsRequest{AfterTurnId: want[0]})
	assertCode(t, err, codes.InvalidArgument, "after_turn_id")

	// A rolled-back turn is not listed.
	gone := newestFirst[0]
	s := all.Turns[0].SessionId
	pos := h.appendFact(s, "thread", all.Turns[0].ThreadId, &eventsv1.RuntimeEvent{Type: "history.rollback.completed", ThreadId: all.Turns[0].ThreadId,
		Payload: &eventsv1.RuntimeEvent_HistoryRollbackCompleted{HistoryRollbackCompleted: &eventsv1.HistoryRollback{RemovedTurnIds: []string{gone}}}})
	after, err := h.client.ListTurns(ctx, &controlv1.ListTurnsRequest{MinSequence: pos})
	if err != nil {
		t.Fatal(err)
	}
	if got := turnIDs(after.Turns); strings.Join(got, " ") != strings.Join(want[1:], " ") || after.TotalSize != int64(len(want)-1) {
		t.Fatalf("after the rollback of %s: %v (total %d)", gone, got, after.TotalSize)
	}

	_, err = h.client.ListTurns(ctx, &controlv1.ListTurnsRequest{PageToken: "50"})
	assertCode(t, err, codes.InvalidArgument, "page_token")
	_, err = h.client.ListTurns(ctx, &controlv1.ListTurnsRequest{PageSize: 501})
	assertCode(t, err, codes.InvalidArgument, "page_size")
	_, err = h.client.ListTurns(ctx, &controlv1.ListTurnsRequest{PageSize: -1})
	assertCode(t, err, codes.InvalidArgument, "page_size")
}

func turnIDs(ts []*controlv1.Turn) []string {
	out := make([]string, len(ts))
	for i, tu := range ts {
		out[i] = tu.TurnId
	}
	return out
}

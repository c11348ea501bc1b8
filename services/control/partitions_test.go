package control_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
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

func taskCreated(thread, task string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: "task.created", ThreadId: thread, TaskId: task,
		Payload: &eventsv1.RuntimeEvent_TaskCreated{TaskCreated: &eventsv1.TaskCreated{}}}
}

// LU-4: facts of another session that name a thread (a task created in
// session s2 with the thread_id of s1's thread, a cost, an error) do not
// change the thread. The two sessions are in different partitions, folded
// concurrently; the thread is its own session's to write.
func TestFactsOfAnotherSessionDoNotChangeTheThread(t *testing.T) {
	h := newPartitioned(t, nil)
	ctx := acme(t)
	s1, s2 := h.sessionIn("acme", 0, "own"), h.sessionIn("acme", 1, "other")
	sub := h.submit(ctx, s1, "th1")
	before := h.threadRead(ctx, s1, "th1", sub.Sequence)

	h.appendFact(s2, "task", "task_x", taskCreated("th1", "task_x"))
	h.appendFact(s2, "routing", sub.Turn.TurnId, &eventsv1.RuntimeEvent{Type: "cost.recorded", ThreadId: "th1", TurnId: sub.Turn.TurnId,
		Payload: &eventsv1.RuntimeEvent_CostRecorded{CostRecorded: &eventsv1.CostRecorded{UsageId: "u1"}}})
	last := h.appendFact(s2, "runtime", "err_1", &eventsv1.RuntimeEvent{Type: "runtime.error", ThreadId: "th1",
		Payload: &eventsv1.RuntimeEvent_RuntimeError{RuntimeError: &eventsv1.RuntimeError{Code: "boom", Message: "not th1's"}}})

	// Read once the read model holds s2's partition up to the last fact.
	if after := h.threadRead(ctx, s1, "th1", last); !proto.Equal(after, before) {
		t.Fatalf("another session's facts changed the thread:\nbefore %v\nafter  %v", before, after)
	}
}

// LU-4 at P = 3: while a thread's own session works on it (a turn queued
// behind another, an action asked and answered, turns started and ended),
// two other sessions in the other partitions name it in facts all along.
// The thread's read model is what its own session's facts say: the thread
// folded from them alone.
func TestThreadReadIsWhatItsOwnSessionsFactsSay(t *testing.T) {
	h := newPartitioned(t, nil)
	ctx := acme(t)
	own := h.sessionIn("acme", 0, "own")
	others := []string{h.sessionIn("acme", 1, "other"), h.sessionIn("acme", 2, "other")}
	lasts := make([]uint64, len(others))
	var wg sync.WaitGroup
	for i, s := range others {
		wg.Go(func() {
			for j := range 40 {
				task := fmt.Sprintf("task_%d", j)
				res, err := h.log.Append(context.Background(), eventlog.Aggregate{Tenant: "acme", Session: s, Kind: "task", ID: task}, eventlog.Any, taskCreated("th1", task))
				if err != nil {
					t.Error(err)
					return
				}
				lasts[i] = res[0].Sequence
			}
		})
	}
	first := h.submit(ctx, own, "th1").Turn.TurnId
	queued := h.submit(ctx, own, "th1").Turn.TurnId
	h.report(ctx, started(first))
	if _, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: own, ThreadId: "th1", TurnId: first, ActionId: "act_1",
		ActionType: "input", Decisions: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act_1", Decision: "a"}); err != nil {
		t.Fatal(err)
	}
	h.report(ctx, completed(first))
	h.report(ctx, started(queued))
	wg.Wait()

	for _, last := range lasts {
		h.threadRead(ctx, own, "th1", last)
	}
	got := h.threadRead(ctx, own, "th1", h.sessionHead(own))
	got.ActiveTurn = nil // joined at read time

	want := projection.NewMemory()
	view := h.log.Of("acme", own)
	if _, err := view.Read(ctx, []string{h.log.Subjects.Session("acme", own)}, eventlog.FromStart, func(r *eventlog.Record) error {
		return projector.ApplyOne(ctx, want, readmodel.Projection{}, r)
	}); err != nil {
		t.Fatal(err)
	}
	th, ok, err := readmodel.Thread(ctx, want, "acme", "th1")
	if err != nil || !ok {
		t.Fatalf("thread folded from its session's facts: %v %v", ok, err)
	}
	if th.ActiveTurnId != queued || len(th.TaskIds) != 0 {
		t.Fatalf("the session's own fold: active %q, tasks %v", th.ActiveTurnId, th.TaskIds)
	}
	if !proto.Equal(got, th) {
		t.Fatalf("thread read model differs from its session's facts:\ngot  %v\nwant %v", got, th)
	}
}

// LU-5: ids a caller chooses (thread, turn, action, subagent, channel,
// process) are unique in a tenant, but two sessions can both use one
// before either's check sees the other. The session folded first keeps its
// documents and another session's facts about those ids change nothing;
// the API still refuses a use by a third session.
func TestIDsUsedInTwoSessionsKeepTheFirstSessionsDocuments(t *testing.T) {
	h := newPartitioned(t, nil)
	ctx := acme(t)
	s1, s2 := h.sessionIn("acme", 0, "first"), h.sessionIn("acme", 1, "second")
	h.submit(ctx, s1, "th1", func(r *controlv1.SubmitTurnRequest) { r.TurnId = "turn_a" })
	h.report(ctx, started("turn_a"), processEvent("turn_a", "proc_a", "process.started", &eventsv1.ProcessStarted{Command: "cat"}))
	if _, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: s1, ThreadId: "th1", TurnId: "turn_a", ActionId: "act_a",
		ActionType: "input", Decisions: []string{"yes", "no"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: s1, ParentThreadId: "th1", ParentTurnId: "turn_a", SubagentId: "sub_a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{SessionId: s1, ChannelId: "chan_a", Peer: "peer-1"}); err != nil {
		t.Fatal(err)
	}
	before := h.threadRead(ctx, s1, "th1", h.sessionHead(s1))
	if before.ActiveTurn.GetStatus() != controlv1.TurnStatus_TURN_STATUS_WAITING_INPUT || len(before.PendingActions) != 1 {
		t.Fatalf("s1's thread before: %v", before)
	}

	// s2's facts about the same ids, as its commands would have written
	// them had their checks not seen s1's.
	h.appendFact(s2, "thread", "th1", &eventsv1.RuntimeEvent{Type: "thread.started", ThreadId: "th1",
		Payload: &eventsv1.RuntimeEvent_ThreadStarted{ThreadStarted: &eventsv1.ThreadStarted{}}})
	h.appendFact(s2, "thread", "th1", &eventsv1.RuntimeEvent{Type: "action.resolved", ThreadId: "th1", TurnId: "turn_a", ActionId: "act_a",
		Payload: &eventsv1.RuntimeEvent_ActionResolved{ActionResolved: &eventsv1.ActionResolved{Decision: "no"}}})
	h.appendFact(s2, "thread", "th1", &eventsv1.RuntimeEvent{Type: "subagent.closed", ThreadId: "th1", TurnId: "turn_a", SubagentId: "sub_a",
		Payload: &eventsv1.RuntimeEvent_SubagentClosed{SubagentClosed: &eventsv1.SubagentStatus{Status: "closed"}}})
	h.appendFact(s2, "turn", "turn_a", processEvent("turn_a", "proc_a", "process.completed", &eventsv1.ProcessCompleted{}))
	end := completed("turn_a")
	end.ThreadId = "th1"
	h.appendFact(s2, "thread", "th1", end)
	last := h.appendFact(s2, "channel", "chan_a", &eventsv1.RuntimeEvent{Type: "channel.connected", ChannelId: "chan_a",
		Payload: &eventsv1.RuntimeEvent_ChannelConnected{ChannelConnected: &eventsv1.ChannelFact{Peer: "peer-2"}}})

	if after := h.threadRead(ctx, s1, "th1", last); !proto.Equal(after, before) {
		t.Fatalf("s2's facts changed s1's thread, turn or action:\nbefore %v\nafter  %v", before, after)
	}
	subs, err := h.client.ListSubagents(ctx, &controlv1.ListSubagentsRequest{SessionId: s1, ThreadId: "th1"})
	if err != nil || len(subs.Subagents) != 1 || subs.Subagents[0].Status != controlv1.SubagentStatus_SUBAGENT_STATUS_RUNNING {
		t.Fatalf("s1's subagents: %v %v", subs, err)
	}
	ch, _, err := readmodel.Channel(ctx, h.store, "acme", "chan_a")
	if err != nil || ch.GetSessionId() != s1 || ch.GetPeer() != "peer-1" {
		t.Fatalf("s1's channel: %v %v", ch, err)
	}
	p, _, err := readmodel.Process(ctx, h.store, "acme", "proc_a")
	if err != nil || p.GetSessionId() != s1 || p.GetStatus() != controlv1.ProcessStatus_PROCESS_STATUS_RUNNING {
		t.Fatalf("s1's process: %v %v", p, err)
	}

	// Through the API a third session's use is refused: the ids are s1's.
	s3 := h.sessionIn("acme", 2, "third")
	_, err = h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: s3, ThreadId: "th1", Input: text("mine")})
	assertCode(t, err, codes.AlreadyExists, "th1")
	_, err = h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: s3, ThreadId: "th3", TurnId: "turn_a", Input: text("mine")})
	assertCode(t, err, codes.AlreadyExists, "turn_a")
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

// waitWatch says when the service starts waiting on a checkpoint, so that
// a test changes something only once a long poll is waiting (not merely
// sent): the poll must then wake on the change itself.
type waitWatch struct {
	projection.Store
	waits chan string
}

func newWaitWatch(s projection.Store) *waitWatch {
	return &waitWatch{Store: s, waits: make(chan string, 1024)}
}

func (w *waitWatch) WaitFor(ctx context.Context, name string, seq uint64) (uint64, error) {
	select {
	case w.waits <- name:
	default:
	}
	return w.Store.WaitFor(ctx, name, seq)
}

// drain forgets the waits seen so far.
func (w *waitWatch) drain() {
	for len(w.waits) > 0 {
		<-w.waits
	}
}

// await returns once the service waits on a checkpoint whose name match
// accepts.
func (w *waitWatch) await(t *testing.T, match func(string) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case name := <-w.waits:
			if match(name) {
				return
			}
		case <-deadline:
			t.Fatal("the service never waited on the checkpoint")
		}
	}
}

// GS-4: a ClaimTurn long poll wakes on a turn that becomes claimable in any
// partition (the nap is an hour here: only the wake can find it), and
// answers turn.started's position.
func TestClaimWakesOnATurnOfAnyPartition(t *testing.T) {
	var watch *waitWatch
	h := newPartitioned(t, func(h *harness) {
		h.claimNap = time.Hour
		h.wrapStore = func(s projection.Store) projection.Store { watch = newWaitWatch(s); return watch }
	})
	ctx := acme(t)
	if c := h.claim(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w1"}); c.GetTurn() != nil || c.GetSequence() != 0 {
		t.Fatalf("claim with nothing claimable: %v", c)
	}
	for k := range 3 {
		s := h.sessionIn("acme", k, "claim")
		watch.drain()
		got := make(chan *controlv1.ClaimTurnResponse, 1)
		go func() {
			// The poll would outlast the call: only a wake answers it.
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			c, err := h.client.ClaimTurn(cctx, &controlv1.ClaimTurnRequest{WorkerId: "w1", Wait: durationpb.New(5 * time.Minute)})
			if err != nil {
				t.Error(err)
			}
			got <- c
		}()
		watch.await(t, func(name string) bool { return strings.HasPrefix(name, readmodel.ClaimsName) })
		sub := h.submit(ctx, s, "th-"+s)
		c := <-got
		if c.GetTurn().GetTurnId() != sub.Turn.TurnId || c.GetSequence() <= sub.Sequence || h.log.PartitionOfPosition(c.GetSequence()) != k {
			t.Fatalf("partition %d: claimed %v, want turn %s started after %d in partition %d", k, c, sub.Turn.TurnId, sub.Sequence, k)
		}
	}
}

// WaitSubagents wakes when its session's partition of the read model
// moves: a subagent that completes while the wait is on ends it.
func TestWaitSubagentsWakesOnTheSessionsPartition(t *testing.T) {
	var watch *waitWatch
	h := newPartitioned(t, func(h *harness) {
		h.wrapStore = func(s projection.Store) projection.Store { watch = newWaitWatch(s); return watch }
	})
	ctx := acme(t)
	s := h.sessionIn("acme", 2, "wait")
	parent := h.submit(ctx, s, "main").Turn
	if _, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: s, ParentThreadId: "main", ParentTurnId: parent.TurnId, SubagentId: "sub_w"}); err != nil {
		t.Fatal(err)
	}
	watch.drain()
	done := make(chan *controlv1.WaitSubagentsResponse, 1)
	go func() {
		w, err := h.client.WaitSubagents(ctx, &controlv1.WaitSubagentsRequest{SessionId: s, SubagentIds: []string{"sub_w"}, Timeout: durationpb.New(20 * time.Second)})
		if err != nil {
			t.Error(err)
		}
		done <- w
	}()
	watch.await(t, func(name string) bool { return name == readmodel.Name || strings.HasPrefix(name, readmodel.Name+"@") })
	h.report(ctx, &eventsv1.RuntimeEvent{Type: "subagent.completed", TurnId: parent.TurnId, SubagentId: "sub_w",
		Payload: &eventsv1.RuntimeEvent_SubagentCompleted{SubagentCompleted: &eventsv1.SubagentStatus{Summary: "done"}}})
	if w := <-done; !w.GetAllTerminal() || w.GetSubagents()[0].GetSummary() != "done" || h.log.PartitionOfPosition(w.GetSequence()) != 2 {
		t.Fatalf("wait after completion: %v", w)
	}
}

// afterMillis returns once the clock is past ts's millisecond, so that the
// next fact is stamped later (a poll of the clock, at most a millisecond).
func afterMillis(t *testing.T, created time.Time) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for time.Now().UnixMilli() <= created.UnixMilli() {
		if time.Now().After(deadline) {
			t.Fatal("the clock did not move")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// busy makes partition k of h's log busy with another tenant's turns, so
// its positions run far ahead of the other partitions': by position, what
// is written there next would look newest.
func (h *harness) busy(t *testing.T, k int) {
	t.Helper()
	s := h.sessionIn("globex", k, "busy")
	for range 30 {
		h.submit(globex(t), s, "th-busy")
	}
}

// GS-8: ListSessions is newest first by creation time across partitions,
// and pages by (time, id) with no gap and no repeat, sessions of one
// millisecond included.
func TestSessionsAreListedNewestFirstAcrossPartitions(t *testing.T) {
	h := newPartitioned(t, nil)
	ctx := acme(t)
	h.busy(t, 0)
	var newestFirst []string
	var oldest time.Time
	for k := range 3 {
		s := h.sessionIn("acme", k, "list")
		sub := h.submit(ctx, s, "th-"+s)
		gs, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: s, MinSequence: sub.Sequence})
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			oldest = gs.Session.CreatedAt.AsTime()
		}
		afterMillis(t, gs.Session.CreatedAt.AsTime())
		newestFirst = append([]string{s}, newestFirst...)
	}
	// Three more sessions, one per partition, created in one millisecond
	// before all of them: listed last, by id descending.
	same := timestamppb.New(oldest.Add(-time.Second).Truncate(time.Millisecond))
	var tied []string
	for k := range 3 {
		s := h.sessionIn("acme", k, "tie")
		pos := h.appendFact(s, "session", s, &eventsv1.RuntimeEvent{Type: "session.created", Timestamp: same,
			Payload: &eventsv1.RuntimeEvent_SessionCreated{SessionCreated: &eventsv1.SessionCreated{}}})
		if _, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: s, MinSequence: pos}); err != nil {
			t.Fatal(err)
		}
		tied = append(tied, s)
	}
	slices.Sort(tied)
	slices.Reverse(tied)
	want := append(newestFirst, tied...)

	all, err := h.client.ListSessions(ctx, &controlv1.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sessionIDs(all.Sessions); strings.Join(got, " ") != strings.Join(want, " ") || all.NextPageToken != "" {
		t.Fatalf("sessions %v (next %q), want %v", got, all.NextPageToken, want)
	}
	for _, size := range []int32{1, 2, 4} {
		var got []string
		token := ""
		for {
			page, err := h.client.ListSessions(ctx, &controlv1.ListSessionsRequest{PageSize: size, PageToken: token})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, sessionIDs(page.Sessions)...)
			if token = page.NextPageToken; token == "" || len(got) > len(want) {
				break
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("pages of %d: %v, want %v", size, got, want)
		}
	}
	_, err = h.client.ListSessions(ctx, &controlv1.ListSessionsRequest{PageToken: "50"})
	assertCode(t, err, codes.InvalidArgument, "page_token")
}

// GS-9: claims take the turn that became claimable first, whatever the
// partition: here the older turn is in the busy partition, whose positions
// are far above the newer one's.
func TestClaimsTakeTheOldestTurnAcrossPartitions(t *testing.T) {
	h := newPartitioned(t, nil)
	ctx := acme(t)
	h.busy(t, 0)
	older := h.submit(ctx, h.sessionIn("acme", 0, "claim"), "th-older")
	afterMillis(t, older.Turn.SubmittedAt.AsTime())
	newer := h.submit(ctx, h.sessionIn("acme", 1, "claim"), "th-newer")
	if newer.Sequence > older.Sequence {
		t.Fatalf("the busy partition's position %d is not above the quiet one's %d", older.Sequence, newer.Sequence)
	}
	h.attempts(ctx, older.Turn.TurnId, older.Sequence)
	h.attempts(ctx, newer.Turn.TurnId, newer.Sequence)
	for _, want := range []string{older.Turn.TurnId, newer.Turn.TurnId} {
		if c := h.claim(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w1"}); c.GetTurn().GetTurnId() != want {
			t.Fatalf("claimed %v, want %s", c.GetTurn(), want)
		}
	}
}

func sessionIDs(ss []*controlv1.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.SessionId
	}
	return out
}

// holdApply holds the batches of one checkpoint name until gate is
// closed: a partition whose fold is behind.
type holdApply struct {
	projection.Store
	name string
	gate chan struct{}
}

func (h *holdApply) Apply(ctx context.Context, b projection.Batch) (bool, error) {
	if b.Projection == h.name {
		select {
		case <-h.gate:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return h.Store.Apply(ctx, b)
}

// GS-5: a session's tool inventory joins the tenant's tools, folded in the
// tenant's session-less partition, with the session's own. With the
// session's token only, the read still waits for the tenant's partition:
// a tool registered for the tenant before the call is listed even while
// that partition's fold is behind.
func TestToolInventoryWaitsForTheTenantsPartition(t *testing.T) {
	var watch *waitWatch
	var hold *holdApply
	h := newPartitioned(t, func(h *harness) {
		h.wrapStore = func(s projection.Store) projection.Store {
			k := h.log.Subjects.PartitionOf("acme", eventlog.NoSession)
			hold = &holdApply{Store: s, name: projector.CheckpointName(readmodel.Name, 3, k), gate: make(chan struct{})}
			watch = newWaitWatch(hold)
			return watch
		}
	})
	ctx := acme(t)
	tenantPart := h.log.Subjects.PartitionOf("acme", eventlog.NoSession)
	session := h.sessionIn("acme", (tenantPart+1)%3, "tools")
	h.submit(ctx, session, "th1")
	if _, err := h.client.RegisterTools(ctx, &controlv1.RegisterToolsRequest{WorkerId: "w1", Tools: []*eventsv1.ToolSpec{{Name: "read_file", ReadOnly: true}}}); err != nil {
		t.Fatal(err)
	}
	r, err := h.client.RegisterTools(ctx, &controlv1.RegisterToolsRequest{SessionId: session, WorkerId: "w2", Tools: []*eventsv1.ToolSpec{{Name: "browser"}}})
	if err != nil {
		t.Fatal(err)
	}
	watch.drain()
	got := make(chan *controlv1.GetToolInventoryResponse, 1)
	go func() {
		inv, err := h.client.GetToolInventory(ctx, &controlv1.GetToolInventoryRequest{SessionId: session, MinSequence: r.Sequence})
		if err != nil {
			t.Error(err)
		}
		got <- inv
	}()
	watch.await(t, func(name string) bool { return name == hold.name })
	close(hold.gate)
	inv := <-got
	var names []string
	for _, tool := range inv.GetTools() {
		names = append(names, tool.GetName())
	}
	if fmt.Sprint(names) != "[browser read_file]" {
		t.Fatalf("inventory %v, want the tenant's read_file beside the session's browser", names)
	}
}

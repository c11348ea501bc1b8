package control_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/services/control/app"
)

func TestTenantIsolation(t *testing.T) {
	h := newHarness(t)
	a, g := acme(t), globex(t)
	tu := h.submit(a, "s1", "th1").Turn
	ra, err := h.client.RequestAction(a, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionId: "act_1", ActionType: "input", Decisions: []string{"ok"}})
	if err != nil {
		t.Fatal(err)
	}
	// globex subscribes to its whole tenant from the start of the log.
	sub := h.subscribe(g, &controlv1.SubscribeEventsRequest{Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	calls := map[string]error{}
	_, calls["GetSession"] = h.client.GetSession(g, &controlv1.GetSessionRequest{SessionId: "s1", MinSequence: ra.Sequence})
	_, calls["GetThreadRead"] = h.client.GetThreadRead(g, &controlv1.GetThreadReadRequest{SessionId: "s1", ThreadId: "th1"})
	_, calls["RespondAction"] = h.client.RespondAction(g, &controlv1.RespondActionRequest{ActionId: "act_1", Decision: "ok"})
	_, calls["InterruptTurn"] = h.client.InterruptTurn(g, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "th1"})
	_, calls["RemoveQueuedTurn"] = h.client.RemoveQueuedTurn(g, &controlv1.RemoveQueuedTurnRequest{SessionId: "s1", ThreadId: "th1", QueuedTurnId: tu.TurnId})
	_, calls["ReportEvents"] = h.client.ReportEvents(g, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{started(tu.TurnId)}})
	_, calls["SubmitTurn(require existing)"] = h.client.SubmitTurn(g, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("x"), CreatePolicy: controlv1.CreatePolicy_CREATE_POLICY_REQUIRE_EXISTING})
	for name, err := range calls {
		if status.Code(err) != codes.NotFound {
			t.Errorf("globex %s on acme's resources: %v, want NotFound", name, err)
		}
	}
	list, err := h.client.ListSessions(g, &controlv1.ListSessionsRequest{MinSequence: ra.Sequence})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("globex lists %v %v", list, err)
	}
	// The same ids in globex are globex's own, separate resources.
	own := h.submit(g, "s1", "th1").Turn
	if ev := sub.next().GetEvent(); ev.GetTenantId() != "globex" || ev.GetType() != "session.created" {
		t.Fatalf("globex's subscription delivered %v first", ev)
	}
	if ev := sub.until("turn.submitted"); ev.GetTurnId() != own.TurnId {
		t.Fatalf("globex's subscription delivered %v", ev)
	}
	// acme's action is untouched.
	th := h.threadRead(a, "s1", "th1", 0)
	if len(th.PendingActions) != 1 || th.ActiveTurnId != tu.TurnId {
		t.Fatalf("acme's thread changed: %v", th)
	}
}

func TestBadInputIsRefusedPreciselyAndAppendsNothing(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	if _, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionId: "act_1", ActionType: "input", Decisions: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	head := h.heads(ctx)
	parts := make([]*eventsv1.InputPart, 65)
	for i := range parts {
		parts[i] = text("x")[0]
	}
	cases := []struct {
		name  string
		call  func() error
		code  codes.Code
		field string
	}{
		{"malformed session id", func() error {
			_, err := h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s.1", ThreadId: "th1", Input: text("x")})
			return err
		}, codes.InvalidArgument, "session_id"},
		{"no input", func() error {
			_, err := h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1"})
			return err
		}, codes.InvalidArgument, "input"},
		{"oversized input", func() error {
			_, err := h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: parts})
			return err
		}, codes.InvalidArgument, "input"},
		{"unknown session", func() error {
			_, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: "nope"})
			return err
		}, codes.NotFound, "nope"},
		{"unknown thread (require existing)", func() error {
			_, err := h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th9", Input: text("x"), CreatePolicy: controlv1.CreatePolicy_CREATE_POLICY_REQUIRE_EXISTING})
			return err
		}, codes.NotFound, "th9"},
		{"unknown action", func() error {
			_, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act_9", Decision: "a"})
			return err
		}, codes.NotFound, "act_9"},
		{"decision not offered", func() error {
			_, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: "act_1", Decision: "c"})
			return err
		}, codes.InvalidArgument, "decision"},
		{"unknown turn reported", func() error {
			_, err := h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{started("turn_9")}})
			return err
		}, codes.NotFound, "turn_9"},
		{"tool fact without tool_call_id", func() error {
			_, err := h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{Type: "tool.started", TurnId: tu.TurnId, StepId: "step_1",
				Payload: &eventsv1.RuntimeEvent_ToolStarted{ToolStarted: &eventsv1.ToolStarted{ToolName: "read_file"}}}}})
			return err
		}, codes.InvalidArgument, "events[0].tool_call_id"},
		{"a class workers do not report", func() error {
			_, err := h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{Type: "session.created", TurnId: tu.TurnId}}})
			return err
		}, codes.InvalidArgument, "events[0].type"},
		{"timeout decision not offered", func() error {
			_, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionType: "input", Decisions: []string{"a"},
				Timeout: durationpb.New(time.Minute), DecisionOnTimeout: "z"})
			return err
		}, codes.InvalidArgument, "decision_on_timeout"},
		{"invalid schema", func() error {
			_, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionType: "input", Decisions: []string{"a"}, JsonSchema: `{"type": 12}`})
			return err
		}, codes.InvalidArgument, "json_schema"},
		{"queue op on a turn not queued", func() error {
			_, err := h.client.PromoteQueuedTurn(ctx, &controlv1.PromoteQueuedTurnRequest{SessionId: "s1", ThreadId: "th1", QueuedTurnId: tu.TurnId})
			return err
		}, codes.FailedPrecondition, "TURN_NOT_QUEUED"},
		{"completing a turn twice", func() error {
			_, err := h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{completed(tu.TurnId), completed(tu.TurnId)}})
			return err
		}, codes.FailedPrecondition, "TURN_ENDED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertCode(t, c.call(), c.code, c.field)
		})
	}
	if now := h.heads(ctx); !slices.Equal(now, head) {
		t.Fatalf("refused requests appended: heads %d -> %d", head, now)
	}
}

// Spec scenario "Old session recovery": a session of 1,000 turns hydrates
// with its shell and recent window first, and the cursor pages the rest,
// from a read model rebuilt from the log.
func TestOldSessionRecovery(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	first := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, completed(first.TurnId))
	// The other 999 turns are written straight to the log in batches, as a
	// long-lived session would have accumulated them.
	const total = 1000
	var entries []eventlog.Entry
	agg := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "thread", ID: "th1"}
	for i := 1; i < total; i++ {
		id := fmt.Sprintf("turn_%04d", i)
		entries = append(entries,
			eventlog.Entry{Aggregate: agg, Event: &eventsv1.RuntimeEvent{Type: "turn.submitted", ThreadId: "th1", TurnId: id, Timestamp: timestamppb.Now(),
				Payload: &eventsv1.RuntimeEvent_TurnSubmitted{TurnSubmitted: &eventsv1.TurnSubmitted{Admission: "accepted", Input: text(id)}}}},
			eventlog.Entry{Aggregate: agg, Event: &eventsv1.RuntimeEvent{Type: "turn.completed", ThreadId: "th1", TurnId: id,
				Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: id}}}})
	}
	res, err := h.log.AppendBatch(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("batch entry %d: %v", i, r.Err)
		}
	}
	last := res[len(res)-1].Sequence
	h.restart(true)
	ctx = acme(t)
	page, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: "s1", MinSequence: last, HistoryLimit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if page.Session.TurnCount != total || len(page.History) != 50 || page.History[0].TurnId != fmt.Sprintf("turn_%04d", total-1) || page.HistoryCursor == "" {
		t.Fatalf("first page: %d turns, newest %s, cursor %q, count %d", len(page.History), page.History[0].GetTurnId(), page.HistoryCursor, page.Session.TurnCount)
	}
	seen := map[string]bool{}
	var order []string
	for {
		for _, tu := range page.History {
			if seen[tu.TurnId] {
				t.Fatalf("turn %s on two pages", tu.TurnId)
			}
			seen[tu.TurnId] = true
			order = append(order, tu.TurnId)
		}
		if page.HistoryCursor == "" {
			break
		}
		if page, err = h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: "s1", HistoryLimit: 200, HistoryCursor: page.HistoryCursor}); err != nil {
			t.Fatal(err)
		}
	}
	if len(order) != total || order[total-1] != first.TurnId {
		t.Fatalf("paged %d turns, oldest %s", len(order), order[len(order)-1])
	}
	_, err = h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: "s1", HistoryCursor: "not-a-cursor"})
	assertCode(t, err, codes.InvalidArgument, "history_cursor")
}

// Spec scenario "Subagent delegation".
func TestSubagentDelegation(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	parent := h.submit(ctx, "s1", "main").Turn
	sp, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: "s1", ParentThreadId: "main", ParentTurnId: parent.TurnId,
		SubagentId: "sub_research", Role: "researcher", Objective: "find the bug", Input: text("look at the logs")})
	if err != nil {
		t.Fatal(err)
	}
	child := sp.Subagent
	if child.Status != controlv1.SubagentStatus_SUBAGENT_STATUS_RUNNING || child.ChildThreadId == "" || child.Isolation != "isolated" {
		t.Fatalf("spawned %v", child)
	}
	again, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: "s1", ParentThreadId: "main", ParentTurnId: parent.TurnId, SubagentId: "sub_research"})
	if err != nil || again.Subagent.ChildThreadId != child.ChildThreadId {
		t.Fatalf("retried spawn: %v %v", again, err)
	}
	cth := h.threadRead(ctx, "s1", child.ChildThreadId, sp.Sequence)
	if cth.ParentThreadId != "main" || cth.SubagentId != "sub_research" || cth.ActiveTurnId == "" {
		t.Fatalf("child thread %v", cth)
	}
	// A grandchild under the child's turn.
	gc, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: "s1", ParentThreadId: child.ChildThreadId, ParentTurnId: cth.ActiveTurnId, SubagentId: "sub_deeper"})
	if err != nil || gc.Subagent.Depth != 1 {
		t.Fatalf("grandchild %v %v", gc, err)
	}
	direct, err := h.client.ListSubagents(ctx, &controlv1.ListSubagentsRequest{SessionId: "s1", ThreadId: "main", MinSequence: gc.Sequence})
	if err != nil || len(direct.Subagents) != 1 {
		t.Fatalf("direct children %v %v", direct, err)
	}
	all, err := h.client.ListSubagents(ctx, &controlv1.ListSubagentsRequest{SessionId: "s1", ThreadId: "main", Recursive: true})
	if err != nil || len(all.Subagents) != 2 {
		t.Fatalf("descendants %v %v", all, err)
	}
	w, err := h.client.WaitSubagents(ctx, &controlv1.WaitSubagentsRequest{SessionId: "s1", SubagentIds: []string{"sub_research"}, Timeout: durationpb.New(50 * time.Millisecond)})
	if err != nil || w.AllTerminal {
		t.Fatalf("wait before completion: %v %v", w, err)
	}
	done := make(chan *controlv1.WaitSubagentsResponse, 1)
	go func() {
		w, err := h.client.WaitSubagents(ctx, &controlv1.WaitSubagentsRequest{SessionId: "s1", SubagentIds: []string{"sub_research"}, Timeout: durationpb.New(20 * time.Second)})
		if err != nil {
			t.Error(err)
		}
		done <- w
	}()
	h.report(ctx, &eventsv1.RuntimeEvent{Type: "subagent.completed", TurnId: parent.TurnId, SubagentId: "sub_research",
		Payload: &eventsv1.RuntimeEvent_SubagentCompleted{SubagentCompleted: &eventsv1.SubagentStatus{Summary: "found it"}}})
	if w := <-done; w == nil || !w.AllTerminal || w.Subagents[0].Summary != "found it" {
		t.Fatalf("wait after completion: %v", w)
	}
	// The graph survives a rebuild from the log.
	h.restart(true)
	ctx = acme(t)
	head, err := h.log.Of("acme", "s1").Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err = h.client.ListSubagents(ctx, &controlv1.ListSubagentsRequest{SessionId: "s1", ThreadId: "main", Recursive: true, MinSequence: head})
	if err != nil || len(all.Subagents) != 2 || all.Subagents[0].Status != controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED {
		t.Fatalf("after restart: %v %v", all, err)
	}
}

// Spec scenario "Remote channel reconnect": disconnect mid-stream,
// reconnect from the last ack: no gap, no duplicate.
// TestSessionOfACommandIsFoundBeforeTheReadModelHasIt: commands answer
// without waiting for the read model, so a call naming the session a
// submit just created must find it on the log when the read model trails
// (here: no projector runs at all); an unknown session is still NotFound.
func TestSessionOfACommandIsFoundBeforeTheReadModelHasIt(t *testing.T) {
	h := newHarnessWith(t, func(h *harness) { h.noProjectors = true })
	ctx := acme(t)
	h.submit(ctx, "s1", "th1")
	if _, err := h.client.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{ChannelId: "chan_a", SessionId: "s1", Peer: "slack:C1"}); err != nil {
		t.Fatalf("ReconnectChannel right after the submit that created s1: %v", err)
	}
	if _, err := h.client.RegisterTools(ctx, &controlv1.RegisterToolsRequest{WorkerId: "w1", SessionId: "s1",
		Tools: []*eventsv1.ToolSpec{{Name: "read_file"}}}); err != nil {
		t.Fatalf("RegisterTools right after the submit that created s1: %v", err)
	}
	_, err := h.client.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{ChannelId: "chan_b", SessionId: "s404", Peer: "slack:C1"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("ReconnectChannel on an unknown session: %v, want NotFound", err)
	}
}

// TestAChannelsEndIsRecordedBeforeTheReadModelHasIt: the end of a
// channel's stream is decided on the channel's own facts, as its
// ReconnectChannel and AckEvents are, not on the read model: a stream that
// ends right after its ReconnectChannel, the read model trailing (here: no
// projector runs at all), records its channel.disconnected, at the
// channel's last acknowledged sequence.
func TestAChannelsEndIsRecordedBeforeTheReadModelHasIt(t *testing.T) {
	h := newHarnessWith(t, func(h *harness) { h.noProjectors = true })
	ctx := acme(t)
	h.submit(ctx, "s1", "th1")
	rc, err := h.client.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{ChannelId: "chan_a", SessionId: "s1", Peer: "slack:C1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.AckEvents(ctx, &controlv1.AckEventsRequest{ChannelId: "chan_a", SessionId: "s1", Sequence: rc.Sequence}); err != nil {
		t.Fatal(err)
	}
	// A session and a resume cursor: the handler ends the stream with an
	// error, and records the end before the status reaches the caller.
	stream, err := h.client.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", ChannelId: "chan_a", ResumeCursor: "x"})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("subscription with a session and a resume cursor: %v, want InvalidArgument", err)
	}
	var types []string
	var last *eventsv1.RuntimeEvent
	agg := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "channel", ID: "chan_a"}
	if err := h.readLog(ctx, []string{h.log.Subjects.Aggregate(agg)}, func(r *eventlog.Record) error {
		types, last = append(types, r.Event.GetType()), r.Event
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"channel.connected", "channel.message", "channel.disconnected"}
	if !slices.Equal(types, want) {
		t.Fatalf("the channel's facts: %v, want %v", types, want)
	}
	if got := last.GetChannelDisconnected().GetLastAckedSequence(); got != rc.Sequence {
		t.Fatalf("channel.disconnected at last acknowledged sequence %d, want %d", got, rc.Sequence)
	}
}

func TestRemoteChannelReconnect(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	rc, err := h.client.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{ChannelId: "chan_slack", SessionId: "s1", Peer: "slack:C123"})
	if err != nil {
		t.Fatal(err)
	}
	filter := []string{"model.delta"}
	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", ChannelId: "chan_slack", TypePrefixes: filter, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: rc.ResumeFromSequence})
	h.report(ctx, started(tu.TurnId))
	for i := 0; i < 20; i++ {
		h.report(ctx, delta(tu.TurnId, fmt.Sprint(i)))
	}
	var got []*eventsv1.RuntimeEvent
	for len(got) < 8 {
		got = append(got, sub.next().GetEvent())
	}
	acked := got[5]
	if _, err := h.client.AckEvents(ctx, &controlv1.AckEventsRequest{ChannelId: "chan_slack", SessionId: "s1", Sequence: acked.Sequence}); err != nil {
		t.Fatal(err)
	}
	sub.cancel() // the peer drops mid-stream
	_, _ = sub.stream.Recv()
	rc, err = h.client.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{ChannelId: "chan_slack", SessionId: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if rc.ResumeFromSequence != acked.Sequence+1 || rc.Channel.LastAckedSequence != acked.Sequence {
		t.Fatalf("reconnect: %v", rc)
	}
	sub2 := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", ChannelId: "chan_slack", TypePrefixes: filter, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: rc.ResumeFromSequence})
	var resumed []string
	for len(resumed) < 14 {
		resumed = append(resumed, sub2.next().GetEvent().GetModelDelta().GetText())
	}
	for i, text := range resumed {
		if text != fmt.Sprint(i+6) {
			t.Fatalf("after reconnect got %v, want deltas 6..19 in order", resumed)
		}
	}
	// The disconnect was recorded.
	ch, err := h.client.ReconnectChannel(ctx, &controlv1.ReconnectChannelRequest{ChannelId: "chan_slack", SessionId: "s1"})
	if err != nil || ch.Channel.Status != controlv1.ChannelStatus_CHANNEL_STATUS_CONNECTED {
		t.Fatalf("channel %v %v", ch, err)
	}
	_, err = h.client.AckEvents(ctx, &controlv1.AckEventsRequest{ChannelId: "chan_slack", SessionId: "s1", Sequence: 1 << 40})
	assertCode(t, err, codes.InvalidArgument, "sequence")
}

func TestSlowSubscriberIsCutWithAResumableCursor(t *testing.T) {
	h := newHarness(t)
	h.svc.SetSubscriberLimits(app.SubscriberLimits{Buffer: 8, Stall: 200 * time.Millisecond})
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	r := h.report(ctx, started(tu.TurnId))
	// A client with fixed flow-control windows (no BDP growth): the big
	// deltas below fill them, so the server's sends block however fast the
	// machine is.
	cc, err := grpc.NewClient(h.listenAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stream, err := controlv1.NewControlServiceClient(cc).SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"model.delta"}, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: r.Sequence + 1})
	if err != nil {
		t.Fatal(err)
	}
	// Big deltas fill the transport's window so the server's sends block.
	big := string(make([]byte, 32<<10))
	const n = 200
	for i := 0; i < n; i += 10 {
		var evs []*eventsv1.RuntimeEvent
		for j := i; j < i+10; j++ {
			evs = append(evs, delta(tu.TurnId, fmt.Sprintf("%d:%s", j, big)))
		}
		h.report(ctx, evs...)
	}
	// The subscriber under test is slow: it takes nothing for longer than
	// the stall limit (its window is full, so the server's send blocks),
	// whatever time the reports above took. This sleep is that slowness,
	// not a wait for a condition.
	time.Sleep(2 * 200 * time.Millisecond)
	var last uint64
	received := 0
	var cut error
	for {
		m, err := stream.Recv()
		if err != nil {
			cut = err
			break
		}
		if ev := m.GetEvent(); ev != nil {
			last = ev.Sequence
			received++
		}
	}
	if errors.Is(cut, io.EOF) || status.Code(cut) != codes.ResourceExhausted {
		t.Fatalf("stream ended with %v after %d events, want ResourceExhausted", cut, received)
	}
	resume := ""
	for _, d := range status.Convert(cut).Details() {
		if s := fmt.Sprint(d); strings.Contains(s, "resume_from_sequence") {
			resume = s
		}
	}
	if resume == "" || !strings.Contains(resume, fmt.Sprint(last+1)) {
		t.Fatalf("no resume cursor %d in %v", last+1, status.Convert(cut).Details())
	}
	// Resuming there yields the rest: no gap, no duplicate. A subscriber
	// that keeps reading is never cut, however small its buffer.
	h.svc.SetSubscriberLimits(app.SubscriberLimits{Buffer: 8, Stall: 10 * time.Second})
	sub2 := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"model.delta"}, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: last + 1})
	for received < n {
		ev := sub2.next().GetEvent()
		want := fmt.Sprintf("%d:", received)
		if got := ev.GetModelDelta().GetText(); len(got) < len(want) || got[:len(want)] != want {
			t.Fatalf("after resume got %q..., want %q", got[:min(10, len(got))], want)
		}
		received++
	}
}

func TestSnapshotFirstSubscription(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	r := h.report(ctx, started(tu.TurnId))
	h.threadRead(ctx, "s1", "th1", r.Sequence)
	sub := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", ThreadId: "th1", Start: controlv1.StartFrom_START_FROM_SNAPSHOT, Heartbeat: durationpb.New(20 * time.Millisecond)})
	snap := sub.next().GetSnapshot()
	if snap == nil || snap.Thread.GetActiveTurnId() != tu.TurnId || snap.Thread.ActiveTurn.GetStatus() != controlv1.TurnStatus_TURN_STATUS_RUNNING || snap.Sequence < r.Sequence {
		t.Fatalf("snapshot %v", snap)
	}
	h.report(ctx, delta(tu.TurnId, "after"))
	if ev := sub.next().GetEvent(); ev.GetType() != "model.delta" || ev.Sequence <= snap.Sequence {
		t.Fatalf("first event after the snapshot: %v", ev)
	}
	// An idle stream gets heartbeats.
	m, err := sub.stream.Recv()
	if err != nil || m.GetHeartbeat() == nil {
		t.Fatalf("idle stream sent %v %v", m, err)
	}
}

func TestContextCompactionKeepsPendingActions(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, started(tu.TurnId))
	if _, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId, ActionId: "act_keep", ActionType: "input", Decisions: []string{"go"}}); err != nil {
		t.Fatal(err)
	}
	comp := &eventsv1.ContextCompaction{Trigger: "auto_token_limit", AffectedTurnIds: []string{tu.TurnId}, SummaryRef: "object://AGENTRUNTIME_OBJECTS/summary-1", TokensBefore: 180000, TokensAfter: 12000}
	r := h.report(ctx,
		&eventsv1.RuntimeEvent{Type: "context.compaction.started", TurnId: tu.TurnId, Payload: &eventsv1.RuntimeEvent_ContextCompactionStarted{ContextCompactionStarted: comp}},
		&eventsv1.RuntimeEvent{Type: "context.compaction.completed", TurnId: tu.TurnId, Payload: &eventsv1.RuntimeEvent_ContextCompactionCompleted{ContextCompactionCompleted: comp}})
	th := h.threadRead(ctx, "s1", "th1", r.Sequence)
	if len(th.CompactionSummaryRefs) != 1 || len(th.PendingActions) != 1 || th.PendingActions[0].ActionId != "act_keep" || th.Status != controlv1.ThreadStatus_THREAD_STATUS_WAITING_INPUT {
		t.Fatalf("after compaction: %v", th)
	}
}

func TestToolInventory(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	h.submit(ctx, "s1", "th1")
	tools := []*eventsv1.ToolSpec{
		{Name: "read_file", ReadOnly: true, ConcurrencySafe: true, InterruptBehavior: "cancel"},
		{Name: "shell", Destructive: true, InterruptBehavior: "block"},
	}
	if _, err := h.client.RegisterTools(ctx, &controlv1.RegisterToolsRequest{WorkerId: "w1", Tools: tools}); err != nil {
		t.Fatal(err)
	}
	r, err := h.client.RegisterTools(ctx, &controlv1.RegisterToolsRequest{SessionId: "s1", WorkerId: "w2", Tools: []*eventsv1.ToolSpec{{Name: "shell", Destructive: true, InterruptBehavior: "cancel"}, {Name: "browser"}}})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := h.client.GetToolInventory(ctx, &controlv1.GetToolInventoryRequest{SessionId: "s1", MinSequence: r.Sequence})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range inv.Tools {
		names = append(names, tool.Name)
	}
	if fmt.Sprint(names) != "[browser read_file shell]" || inv.Tools[2].InterruptBehavior != "cancel" || !inv.Tools[1].ReadOnly {
		t.Fatalf("inventory %v", inv.Tools)
	}
	tenantWide, err := h.client.GetToolInventory(ctx, &controlv1.GetToolInventoryRequest{})
	if err != nil || len(tenantWide.Tools) != 2 {
		t.Fatalf("tenant-wide inventory %v %v", tenantWide, err)
	}
	other, err := h.client.GetToolInventory(globex(t), &controlv1.GetToolInventoryRequest{})
	if err != nil || len(other.Tools) != 0 {
		t.Fatalf("globex sees %v %v", other, err)
	}
	_, err = h.client.RegisterTools(ctx, &controlv1.RegisterToolsRequest{WorkerId: "w3", Tools: []*eventsv1.ToolSpec{{Name: "x"}, {Name: "x"}}})
	assertCode(t, err, codes.InvalidArgument, "tools[1].name")
	// What a worker says of its tools' sources (its MCP servers) is
	// recorded with the inventory.
	facts := map[string]string{"mcp_server.everything": "restarting, 1 restarts; last failure: exited (signal: killed)"}
	if _, err := h.client.RegisterTools(ctx, &controlv1.RegisterToolsRequest{WorkerId: "w4", Tools: tools, Facts: facts}); err != nil {
		t.Fatal(err)
	}
	var recorded map[string]string
	if err := h.readLog(ctx, nil, func(r *eventlog.Record) error {
		if s := r.Event.GetSnapshotUpdated(); s.GetKind() == "tool_inventory" && s.GetWorkerId() == "w4" {
			recorded = s.GetFacts()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(recorded) != fmt.Sprint(facts) {
		t.Fatalf("the inventory recorded facts %v, want %v", recorded, facts)
	}
	_, err = h.client.RegisterTools(ctx, &controlv1.RegisterToolsRequest{WorkerId: "w4", Facts: map[string]string{"": "x"}})
	assertCode(t, err, codes.InvalidArgument, "facts")
	_, err = h.client.RegisterTools(ctx, &controlv1.RegisterToolsRequest{WorkerId: "w3", Tools: []*eventsv1.ToolSpec{{Name: "x", InterruptBehavior: "explode"}}})
	assertCode(t, err, codes.InvalidArgument, "interrupt_behavior")
}

// The thread read model carries routing's own summary, folded from the
// routing service's facts with routing's fold.
func TestThreadReadJoinsTheRoutingSummary(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	th := h.threadRead(ctx, "s1", "th1", 0)
	if th.RoutingLimit != nil || th.Routing.GetState() != commonv1.FactState_FACT_STATE_UNKNOWN {
		t.Fatalf("before any routing fact: %v / %v", th.RoutingLimit, th.Routing)
	}
	decided := &eventsv1.RuntimeEvent{Type: "routing.single_candidate", SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId,
		Payload: &eventsv1.RuntimeEvent_RoutingSingleCandidate{RoutingSingleCandidate: &eventsv1.RoutingSingleCandidate{Decision: &eventsv1.RoutingDecision{
			SelectedProviderId: "openai", SelectedModelId: "gpt-5.4", CandidateCount: 1, DecisionSource: "profile",
		}}}}
	res, err := h.log.Append(ctx, eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "routing", ID: tu.TurnId}, eventlog.Any, decided)
	if err != nil {
		t.Fatal(err)
	}
	th = h.threadRead(ctx, "s1", "th1", res[0].Sequence)
	rl := th.RoutingLimit
	if rl == nil || !rl.SingleCandidate || rl.GetDecision().GetSelectedModelId() != "gpt-5.4" || rl.TurnId != tu.TurnId || th.Routing.GetState() != commonv1.FactState_FACT_STATE_KNOWN {
		t.Fatalf("routing summary on the thread: %v / %v", rl, th.Routing)
	}
}

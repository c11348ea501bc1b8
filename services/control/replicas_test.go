package control_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// replica starts another control process on the same log and the same
// Redis read model: its own connection, its own writer cache, its own gRPC
// server, as a second pod would be.
func (h *harness) replica() *harness {
	h.t.Helper()
	log, err := eventlog.Open(context.Background(), natstest.Connect(h.t, h.nats), eventlog.Config{Partitions: h.log.Partitions()})
	if err != nil {
		h.t.Fatal(err)
	}
	r := &harness{t: h.t, memory: h.memory, nats: h.nats, log: log, namespace: h.namespace, leasesInRedis: h.leasesInRedis, webhooks: h.webhooks}
	r.start(nil)
	h.t.Cleanup(func() { r.stop() })
	return r
}

func replicaSet(t *testing.T, n int) []*harness {
	hs := []*harness{newHarness(t)}
	for len(hs) < n {
		hs = append(hs, hs[0].replica())
	}
	return hs
}

// Concurrent submits with the reject policy on one idle thread, one per
// replica: exactly one is admitted each round, every other is refused as
// busy on the state that one created (none Aborted, none admitted twice).
func TestReplicasExactlyOneSubmitWinsEachRound(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) {
			hs := replicaSet(t, n)
			ctx := acme(t)
			first := hs[0].submit(ctx, "s1", "th1").Turn.TurnId
			hs[0].report(ctx, started(first), completed(first))
			for round := 0; round < 8; round++ {
				var admitted atomic.Int32
				var wg sync.WaitGroup
				gate := make(chan struct{})
				turns := make([]string, n)
				for i, h := range hs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-gate
						resp, err := h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("go"),
							BusyPolicy: controlv1.BusyPolicy_BUSY_POLICY_REJECT})
						if status.Code(err) == codes.FailedPrecondition {
							return
						}
						if err != nil {
							t.Errorf("replica %d: %v", i, err)
							return
						}
						admitted.Add(1)
						turns[i] = resp.Turn.TurnId
					}()
				}
				close(gate)
				wg.Wait()
				if got := admitted.Load(); got != 1 {
					t.Fatalf("round %d: %d submits admitted, want exactly 1", round, got)
				}
				for i, turn := range turns {
					if turn != "" {
						// The winner's turn ends through another replica,
						// whose cache has not seen it yet.
						hs[(i+1)%n].report(ctx, started(turn), completed(turn))
					}
				}
			}
		})
	}
}

// A replica whose cached thread predates another replica's submit still
// decides on the log: an interrupt "of the active turn" finds the turn it
// has not seen, and a report for that turn is not refused as unknown.
func TestStaleReplicaDecidesOnTheLog(t *testing.T) {
	hs := replicaSet(t, 2)
	a, b := hs[0], hs[1]
	ctx := acme(t)
	first := a.submit(ctx, "s1", "th1").Turn.TurnId
	// b holds the thread with `first` active...
	b.report(ctx, started(first), completed(first))
	// ...then a admits a second turn b has not seen.
	second := a.submit(ctx, "s1", "th1").Turn.TurnId
	b.report(ctx, started(second)) // not NotFound on b's stale entry
	resp, err := b.client.InterruptTurn(ctx, &controlv1InterruptReq{SessionId: "s1", ThreadId: "th1"})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Accepted || resp.Turn.GetTurnId() != second || resp.Turn.GetStatus() != controlv1.TurnStatus_TURN_STATUS_INTERRUPTING {
		t.Fatalf("interrupt on the stale replica: accepted=%v turn=%s status=%s, want %s interrupting", resp.Accepted, resp.Turn.GetTurnId(), resp.Turn.GetStatus(), second)
	}
}

type controlv1InterruptReq = controlv1.InterruptTurnRequest

// A replica restarted while another keeps writing to the same thread
// continues from the log: its first commands decide on every turn the
// other admitted, and the thread ends as if one process had done it all.
func TestReplicaRestartedMidStream(t *testing.T) {
	hs := replicaSet(t, 2)
	a, b := hs[0], hs[1]
	ctx := acme(t)
	enqueue := func(r *controlv1.SubmitTurnRequest) { r.BusyPolicy = controlv1.BusyPolicy_BUSY_POLICY_ENQUEUE }
	a.submit(ctx, "s1", "th1", enqueue)
	stop := make(chan struct{})
	var submitted atomic.Int32
	var lastSeq atomic.Uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			resp, err := a.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("more"), BusyPolicy: controlv1.BusyPolicy_BUSY_POLICY_ENQUEUE})
			if err != nil {
				t.Error(err)
				return
			}
			submitted.Add(1)
			lastSeq.Store(resp.Sequence)
		}
	}()
	ended := 0
	for i := 0; i < 3; i++ {
		b.restart(false)
		// The restarted replica ends whatever turn is active now.
		th := b.threadRead(ctx, "s1", "th1", 0)
		if th.ActiveTurnId == "" {
			continue
		}
		// The same ids on every try, as a worker retries: a submit loop on
		// the other replica may win the thread many rounds in a row.
		req := &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{started(th.ActiveTurnId), completed(th.ActiveTurnId)}}
		req.Events[0].EventId, req.Events[1].EventId = fmt.Sprintf("evt_start%d", i), fmt.Sprintf("evt_end%d", i)
		_, err := b.client.ReportEvents(ctx, req)
		for try := 0; status.Code(err) == codes.Aborted && try < 20; try++ {
			_, err = b.client.ReportEvents(ctx, req)
		}
		if err != nil {
			// The read model may trail: the turn it named may already have
			// started or ended through b before the restart. Anything else
			// is a failure.
			if status.Code(err) != codes.FailedPrecondition {
				t.Fatal(err)
			}
			continue
		}
		ended++
	}
	close(stop)
	wg.Wait()
	// Every turn is in the thread exactly once, in the order admitted.
	s := a.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1, TypePrefixes: []string{"turn.submitted", "turn.completed"}})
	want := 1 + int(submitted.Load())
	seen, completes := map[string]bool{}, 0
	for len(seen) < want {
		ev := s.next().GetEvent()
		if ev.GetType() == "turn.completed" {
			completes++
			continue
		}
		if seen[ev.GetTurnId()] {
			t.Fatalf("turn %s submitted twice", ev.GetTurnId())
		}
		seen[ev.GetTurnId()] = true
	}
	th := a.threadRead(ctx, "s1", "th1", lastSeq.Load())
	if int(th.TurnCount) != want {
		t.Fatalf("thread counts %d turns, want %d", th.TurnCount, want)
	}
	if ended == 0 {
		t.Fatal("the restarted replica never ended a turn")
	}
}

// Step facts a worker streams never make commands on the same thread fail
// or retry: a worker reports deltas and tool results while clients submit
// (enqueue), respond to nothing, interrupt and resume on the same thread
// through another replica. Zero Aborted, and every reported fact is there.
func TestReportsAndCommandsOnOneThreadNeverAbort(t *testing.T) {
	hs := replicaSet(t, 2)
	worker, client := hs[0], hs[1]
	ctx := acme(t)
	tu := worker.submit(ctx, "s1", "th1").Turn
	worker.report(ctx, started(tu.TurnId))
	var aborted, reported atomic.Int32
	count := func(err error) {
		if status.Code(err) == codes.Aborted {
			aborted.Add(1)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			_, err := worker.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{
				delta(tu.TurnId, fmt.Sprint(i)), delta(tu.TurnId, "+"),
				{Type: "tool.started", TurnId: tu.TurnId, ToolCallId: fmt.Sprintf("call%d", i), StepId: "step_1", Payload: &eventsv1.RuntimeEvent_ToolStarted{ToolStarted: &eventsv1.ToolStarted{ToolName: "echo"}}},
			}})
			count(err)
			if err != nil {
				t.Errorf("report: %v", err)
				return
			}
			reported.Add(3)
		}
	}()
	const commands = 40
	var last uint64
	for i := 0; i < commands; i++ {
		sub, err := client.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("queued"), BusyPolicy: controlv1.BusyPolicy_BUSY_POLICY_ENQUEUE})
		count(err)
		if err != nil {
			t.Fatalf("submit: %v", err)
		}
		last = sub.Sequence
		if i%10 == 9 {
			_, err := client.client.ResumeThread(ctx, &controlv1.ResumeThreadRequest{SessionId: "s1", ThreadId: "th1"})
			count(err)
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
		}
	}
	resp, err := client.client.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId})
	count(err)
	if err != nil || !resp.Accepted {
		t.Fatalf("interrupt: %v %v", resp, err)
	}
	close(done)
	wg.Wait()
	if n := aborted.Load(); n != 0 {
		t.Fatalf("%d Aborted answers", n)
	}
	if reported.Load() == 0 {
		t.Fatal("the worker reported nothing while the commands ran")
	}
	th := client.threadRead(ctx, "s1", "th1", last)
	if int(th.TurnCount) != 1+commands {
		t.Fatalf("thread counts %d turns, want %d", th.TurnCount, 1+commands)
	}
}

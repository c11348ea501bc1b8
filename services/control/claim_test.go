package control_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
	"github.com/agentruntime/agentruntime/services/control/app"
)

func (h *harness) claim(ctx context.Context, req *controlv1.ClaimTurnRequest) *controlv1.ClaimTurnResponse {
	h.t.Helper()
	if req.WorkerId == "" {
		req.WorkerId = "w1"
	}
	resp, err := h.client.ClaimTurn(ctx, req)
	if err != nil {
		h.t.Fatalf("ClaimTurn: %v", err)
	}
	return resp
}

func TestClaimStartsTheTurnUnderALease(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	sub := h.submit(ctx, "s1", "th1")
	got := h.claim(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w7", Wait: durationpb.New(5 * time.Second)})
	if got.GetTurn().GetTurnId() != sub.Turn.TurnId || got.GetTurn().GetStatus() != controlv1.TurnStatus_TURN_STATUS_RUNNING || got.GetRunId() == "" {
		t.Fatalf("claim = %v", got)
	}
	if got.GetLeaseExpiresAt().AsTime().Before(time.Now().Add(20 * time.Second)) {
		t.Fatalf("default lease ends too soon: %v", got.GetLeaseExpiresAt().AsTime())
	}
	// The claim is the fact: turn.started names the worker and the run.
	var startedEv *eventsv1.RuntimeEvent
	err := h.readLog(context.Background(), []string{h.log.Subjects.Tenant("acme")}, func(r *eventlog.Record) error {
		if r.Event.GetType() == "turn.started" {
			startedEv = r.Event
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if startedEv.GetRunId() != got.GetRunId() || startedEv.GetTurnStarted().GetWorkerId() != "w7" {
		t.Fatalf("turn.started = %v", startedEv)
	}
	// Nothing else is claimable, for this tenant or another.
	if again := h.claim(ctx, &controlv1.ClaimTurnRequest{}); again.GetTurn() != nil {
		t.Fatalf("second claim got %v", again.GetTurn())
	}
	if other := h.claim(globex(t), &controlv1.ClaimTurnRequest{}); other.GetTurn() != nil {
		t.Fatalf("another tenant claimed %v", other.GetTurn())
	}
	// Another tenant cannot heartbeat it (existence does not leak).
	_, err = h.client.HeartbeatTurn(globex(t), &controlv1.HeartbeatTurnRequest{TurnId: sub.Turn.TurnId, RunId: got.RunId})
	assertCode(t, err, codes.NotFound, sub.Turn.TurnId)
	hb, err := h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: sub.Turn.TurnId, RunId: got.RunId, LeaseToken: got.LeaseToken})
	if err != nil || hb.GetInterruptRequested() || hb.GetStatus() != controlv1.TurnStatus_TURN_STATUS_RUNNING {
		t.Fatalf("heartbeat = %v, %v", hb, err)
	}
	// A wrong run, or the right run without its token, holds no lease.
	_, err = h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: sub.Turn.TurnId, RunId: "run_other", LeaseToken: got.LeaseToken})
	assertCode(t, err, codes.FailedPrecondition, "LEASE_LOST")
	_, err = h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: sub.Turn.TurnId, RunId: got.RunId})
	assertCode(t, err, codes.FailedPrecondition, "LEASE_LOST")
	_, err = h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: sub.Turn.TurnId, RunId: got.RunId, LeaseToken: "0123456789abcdef0123456789abcdef"})
	assertCode(t, err, codes.FailedPrecondition, "LEASE_LOST")
	// An interrupt reaches the worker through its heartbeat.
	if _, err := h.client.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "th1", Reason: "stop"}); err != nil {
		t.Fatal(err)
	}
	hb, err = h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: sub.Turn.TurnId, RunId: got.RunId, LeaseToken: got.LeaseToken})
	if err != nil || !hb.GetInterruptRequested() || hb.GetStatus() != controlv1.TurnStatus_TURN_STATUS_INTERRUPTING {
		t.Fatalf("heartbeat after interrupt = %v, %v", hb, err)
	}
}

func TestClaimValidation(t *testing.T) {
	h := newHarness(t)
	_, err := h.client.ClaimTurn(acme(t), &controlv1.ClaimTurnRequest{WorkerId: "bad id"})
	assertCode(t, err, codes.InvalidArgument, "worker_id")
	_, err = h.client.ClaimTurn(acme(t), &controlv1.ClaimTurnRequest{WorkerId: "w", Wait: durationpb.New(time.Hour)})
	assertCode(t, err, codes.InvalidArgument, "wait")
	_, err = h.client.HeartbeatTurn(acme(t), &controlv1.HeartbeatTurnRequest{TurnId: "t1"})
	assertCode(t, err, codes.InvalidArgument, "run_id")
	_, err = h.client.HeartbeatTurn(acme(t), &controlv1.HeartbeatTurnRequest{TurnId: "nope", RunId: "r1"})
	assertCode(t, err, codes.NotFound, "nope")
}

func TestClaimLongPollsAndFiltersBySession(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	type result struct {
		resp *controlv1.ClaimTurnResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		r, err := h.client.ClaimTurn(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w1", SessionId: "s2", Wait: durationpb.New(20 * time.Second)})
		done <- result{r, err}
	}()
	// A turn of another session does not wake it with a claim; the one of
	// s2 does.
	other := h.submit(ctx, "s1", "th1")
	want := h.submit(ctx, "s2", "th2")
	r := <-done
	if r.err != nil || r.resp.GetTurn().GetTurnId() != want.Turn.TurnId {
		t.Fatalf("long poll = %v, %v (want %s)", r.resp, r.err, want.Turn.TurnId)
	}
	if got := h.claim(ctx, &controlv1.ClaimTurnRequest{SessionId: "s1"}); got.GetTurn().GetTurnId() != other.Turn.TurnId {
		t.Fatalf("claim s1 = %v", got)
	}
}

func TestClaimFollowsTheQueue(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	first := h.submit(ctx, "s1", "th1")
	second := h.submit(ctx, "s1", "th1")
	if second.Turn.Status != controlv1.TurnStatus_TURN_STATUS_QUEUED {
		t.Fatalf("second = %v", second.Turn)
	}
	c1 := h.claim(ctx, &controlv1.ClaimTurnRequest{Wait: durationpb.New(5 * time.Second)})
	if c1.GetTurn().GetTurnId() != first.Turn.TurnId {
		t.Fatalf("claimed %v, want the active turn", c1.GetTurn())
	}
	if c := h.claim(ctx, &controlv1.ClaimTurnRequest{}); c.GetTurn() != nil {
		t.Fatalf("a queued turn was claimed: %v", c.GetTurn())
	}
	h.reportRun(ctx, c1, completed(first.Turn.TurnId))
	c2 := h.claim(ctx, &controlv1.ClaimTurnRequest{Wait: durationpb.New(5 * time.Second)})
	if c2.GetTurn().GetTurnId() != second.Turn.TurnId {
		t.Fatalf("after the first ended claimed %v, want %s", c2.GetTurn(), second.Turn.TurnId)
	}
}

func TestConcurrentClaimersStartEachTurnOnce(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	const turns, workers = 4, 10
	want := map[string]bool{}
	for i := range turns {
		want[h.submit(ctx, "s1", "th"+string(rune('a'+i))).Turn.TurnId] = true
	}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := h.client.ClaimTurn(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w" + string(rune('a'+w)), Wait: durationpb.New(500 * time.Millisecond)})
			if err != nil {
				t.Error(err)
				return
			}
			if r.GetTurn() != nil {
				mu.Lock()
				got[r.GetTurn().GetTurnId()]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != turns {
		t.Fatalf("claimed %v, want each of %v", got, want)
	}
	for id, n := range got {
		if !want[id] || n != 1 {
			t.Fatalf("turn %s claimed %d times", id, n)
		}
	}
}

func testLeaseExpiry(t *testing.T, redisLeases bool) {
	h := newHarnessWith(t, func(h *harness) { h.leasesInRedis = redisLeases })
	ctx := acme(t)
	h.submit(ctx, "s1", "th1", oneAttempt)
	queued := h.submit(ctx, "s1", "th1")
	s := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"turn.failed", "queue.changed", "run.status"}})
	c := h.claim(ctx, &controlv1.ClaimTurnRequest{LeaseTtl: durationpb.New(300 * time.Millisecond), Wait: durationpb.New(5 * time.Second)})
	// Heartbeats keep it alive past its first ttl.
	for range 3 {
		if _, err := h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: c.Turn.TurnId, RunId: c.RunId, LeaseToken: c.LeaseToken, LeaseTtl: durationpb.New(300 * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		<-time.After(150 * time.Millisecond)
	}
	// Then the worker goes silent: the sweeper records the run lost and,
	// the turn's one attempt spent, fails the turn as lost.
	lost := s.until("run.status")
	if lost.GetRunId() != c.RunId || lost.GetRunStatus().GetPhase() != "lost" || lost.GetRunStatus().GetMetadata()["next"] != "fail" ||
		lost.GetRunStatus().GetMetadata()["max_attempts_source"] != "option max_attempts" {
		t.Fatalf("run.status = %v", lost)
	}
	failed := s.until("turn.failed")
	if failed.GetTurnId() != c.Turn.TurnId || failed.GetTurnFailed().GetCategory() != "lost" || failed.GetRunId() != c.RunId {
		t.Fatalf("turn.failed = %v", failed)
	}
	if q := s.until("queue.changed"); q.GetQueueChanged().GetTurnId() != queued.Turn.TurnId || q.GetQueueChanged().GetChange() != "dequeued" {
		t.Fatalf("queue after the lost turn = %v", q)
	}
	_, err := h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: c.Turn.TurnId, RunId: c.RunId, LeaseToken: c.LeaseToken})
	assertCode(t, err, codes.FailedPrecondition, "LEASE_LOST")
	// The worker's late report is refused: its run was lost.
	_, err = h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{completed(c.Turn.TurnId)}, RunId: c.RunId, LeaseToken: c.LeaseToken})
	assertCode(t, err, codes.FailedPrecondition, "LEASE_LOST")
	// The next turn is claimable.
	if next := h.claim(ctx, &controlv1.ClaimTurnRequest{Wait: durationpb.New(5 * time.Second)}); next.GetTurn().GetTurnId() != queued.Turn.TurnId {
		t.Fatalf("next claim = %v", next)
	}
}

func TestLeaseExpiryFailsTheTurnAsLost(t *testing.T) {
	t.Run("in process", func(t *testing.T) { testLeaseExpiry(t, false) })
	t.Run("redis", func(t *testing.T) { testLeaseExpiry(t, true) })
}

// Several replicas sweeping the same expired lease write one turn.failed.
func TestSweepersOnSeveralReplicasWriteOneLoss(t *testing.T) {
	h := newHarnessWith(t, func(h *harness) { h.leasesInRedis = true })
	ctx := acme(t)
	h.submit(ctx, "s1", "th1", oneAttempt)
	c := h.claim(ctx, &controlv1.ClaimTurnRequest{LeaseTtl: durationpb.New(200 * time.Millisecond), Wait: durationpb.New(5 * time.Second)})
	leases := lease.NewRedis(redistest.Client(t), "agentruntime:control:lease:")
	replicas := make([]*app.Claims, 4)
	for i := range replicas {
		replicas[i] = app.NewClaims(app.New(h.log, h.store), leases, nil)
	}
	<-time.After(300 * time.Millisecond)
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.SweepOnce(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	s := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1, TypePrefixes: []string{"turn.failed", "turn.submitted", "run.status"}})
	s.until("run.status")
	s.until("turn.failed")
	h.submit(ctx, "s1", "other-thread") // a marker after every sweep's write
	for {
		ev := s.next().GetEvent()
		if ev.GetType() == "turn.failed" || ev.GetType() == "run.status" {
			t.Fatalf("a second %s for %s: %v", ev.GetType(), c.Turn.TurnId, ev)
		}
		if ev.GetType() == "turn.submitted" && ev.GetThreadId() == "other-thread" {
			return
		}
	}
}

// oneAttempt gives a turn an attempt budget of one: a lost run fails it.
func oneAttempt(r *controlv1.SubmitTurnRequest) { r.Options = map[string]string{"max_attempts": "1"} }

func (h *harness) attempts(ctx context.Context, turn string, minSeq uint64) *controlv1.TurnAttempts {
	h.t.Helper()
	resp, err := h.client.GetTurnAttempts(ctx, &controlv1.GetTurnAttemptsRequest{TurnId: turn, MinSequence: minSeq})
	if err != nil {
		h.t.Fatalf("GetTurnAttempts: %v", err)
	}
	return resp.GetAttempts()
}

func attemptSummary(at *controlv1.TurnAttempts) string {
	var out []string
	for _, a := range at.GetAttempts() {
		out = append(out, fmt.Sprintf("%d:%s:%s:%s", a.GetAttempt(), a.GetRunId(), a.GetWorkerId(), enums.Word(a.GetStatus())))
	}
	return strings.Join(out, " ")
}

// A worker that goes silent mid-turn: its run becomes lost, its pending
// approval is cancelled, the turn is claimable again, a second worker's
// claim is attempt 2 and completes it; both attempts are in the history
// and on the attempts read model.
func TestLostRunIsRetriedAsANewAttempt(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	sub := h.submit(ctx, "s1", "th1")
	turnID := sub.Turn.TurnId
	s := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"run.status", "action.", "turn."}})
	c1 := h.claim(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w1", LeaseTtl: durationpb.New(200 * time.Millisecond), Wait: durationpb.New(5 * time.Second)})
	if got := attemptSummary(h.attempts(ctx, turnID, c1.Sequence)); got != "1:"+c1.RunId+":w1:running" {
		t.Fatalf("attempts after the claim = %s", got)
	}
	// The first worker asks a question, then dies.
	asked, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: turnID, ActionType: "input", Prompt: "which file?", Decisions: []string{"submit"}})
	if err != nil {
		t.Fatal(err)
	}
	lost := s.until("run.status")
	if lost.GetRunId() != c1.RunId || lost.GetRunStatus().GetPhase() != "lost" {
		t.Fatalf("run.status = %v", lost)
	}
	if md := lost.GetRunStatus().GetMetadata(); md["next"] != "retry" || md["attempt"] != "1" || md["max_attempts"] != "3" || md["max_attempts_source"] != "default" || md["worker_id"] != "w1" {
		t.Fatalf("run.status metadata = %v", md)
	}
	if res := s.until("action.resolved"); res.GetActionId() != asked.GetAction().GetActionId() || res.GetActionResolved().GetOutcome() != eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED {
		t.Fatalf("the lost run's question = %v", res)
	}
	at := h.attempts(ctx, turnID, lost.GetSequence())
	if !at.GetRetryPending() || at.GetMaxAttempts() != 3 || attemptSummary(at) != "1:"+c1.RunId+":w1:lost" {
		t.Fatalf("attempts after the loss = %v", at)
	}
	// The dead run's heartbeat is refused; the turn is claimable again.
	_, err = h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: turnID, RunId: c1.RunId, LeaseToken: c1.LeaseToken})
	assertCode(t, err, codes.FailedPrecondition, "LEASE_LOST")
	if other := h.claim(globex(t), &controlv1.ClaimTurnRequest{}); other.GetTurn() != nil {
		t.Fatalf("another tenant claimed %v", other.GetTurn())
	}
	c2 := h.claim(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w2", Wait: durationpb.New(5 * time.Second)})
	if c2.GetTurn().GetTurnId() != turnID || c2.RunId == c1.RunId || c2.GetTurn().GetStatus() != controlv1.TurnStatus_TURN_STATUS_RUNNING {
		t.Fatalf("second claim = %v (first run %s)", c2, c1.RunId)
	}
	if st := s.until("turn.started"); st.GetRunId() != c2.RunId || st.GetTurnStarted().GetWorkerId() != "w2" {
		t.Fatalf("second turn.started = %v", st)
	}
	if r := s.until("run.status"); r.GetRunId() != c2.RunId || r.GetRunStatus().GetPhase() != "retrying" || r.GetRunStatus().GetMetadata()["previous_run_id"] != c1.RunId {
		t.Fatalf("retry fact = %v", r)
	}
	// Nobody else gets it while attempt 2 runs.
	if again := h.claim(ctx, &controlv1.ClaimTurnRequest{}); again.GetTurn() != nil {
		t.Fatalf("a third claim got %v", again.GetTurn())
	}
	// A worker cannot declare a run lost itself.
	_, err = h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{Type: "run.status", TurnId: turnID, RunId: c2.RunId,
		Payload: &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{Phase: "lost", Metadata: map[string]string{"next": "retry"}}}}}, RunId: c2.RunId, LeaseToken: c2.LeaseToken})
	assertCode(t, err, codes.InvalidArgument, "run_status.phase")
	done := completed(turnID)
	done.RunId = c2.RunId
	rep := h.reportRun(ctx, c2, done)
	at = h.attempts(ctx, turnID, rep.Sequence)
	if at.GetRetryPending() || attemptSummary(at) != "1:"+c1.RunId+":w1:lost 2:"+c2.RunId+":w2:completed" {
		t.Fatalf("attempts at the end = %v", at)
	}
	if a := at.GetAttempts()[0]; a.GetEndedSequence() != lost.GetSequence() || a.GetOutcomeCategory() != "lost" || a.GetStartedSequence() >= a.GetEndedSequence() {
		t.Fatalf("attempt 1 = %v", a)
	}
	// Another tenant does not learn the turn exists.
	_, err = h.client.GetTurnAttempts(globex(t), &controlv1.GetTurnAttemptsRequest{TurnId: turnID})
	assertCode(t, err, codes.NotFound, turnID)
}

// Each lost run uses one attempt; the last one fails the turn as lost and
// the queue moves on.
func TestLostRunsSpendTheAttemptBudget(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	sub := h.submit(ctx, "s1", "th1", func(r *controlv1.SubmitTurnRequest) { r.Options = map[string]string{"max_attempts": "2"} })
	queued := h.submit(ctx, "s1", "th1")
	s := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"run.status", "turn.failed"}})
	var runs []string
	for i := range 2 {
		c := h.claim(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w" + strconv.Itoa(i+1), LeaseTtl: durationpb.New(150 * time.Millisecond), Wait: durationpb.New(5 * time.Second)})
		if c.GetTurn().GetTurnId() != sub.Turn.TurnId {
			t.Fatalf("claim %d = %v", i+1, c)
		}
		runs = append(runs, c.RunId)
		for {
			ev := s.until("run.status")
			if ev.GetRunStatus().GetPhase() == "lost" {
				if ev.GetRunId() != c.RunId {
					t.Fatalf("lost run %s, want %s", ev.GetRunId(), c.RunId)
				}
				break
			}
		}
	}
	failed := s.until("turn.failed")
	if failed.GetTurnId() != sub.Turn.TurnId || failed.GetRunId() != runs[1] || failed.GetTurnFailed().GetCategory() != "lost" ||
		!strings.Contains(failed.GetTurnFailed().GetMessage(), "attempt 2 of 2") {
		t.Fatalf("turn.failed = %v", failed)
	}
	at := h.attempts(ctx, sub.Turn.TurnId, failed.GetSequence())
	if at.GetRetryPending() || attemptSummary(at) != "1:"+runs[0]+":w1:lost 2:"+runs[1]+":w2:lost" {
		t.Fatalf("attempts = %v", at)
	}
	if next := h.claim(ctx, &controlv1.ClaimTurnRequest{Wait: durationpb.New(5 * time.Second)}); next.GetTurn().GetTurnId() != queued.Turn.TurnId {
		t.Fatalf("next claim = %v", next)
	}
}

// A turn whose interrupt was requested is not started again when its
// worker is lost: it ends cancelled, which is what the interrupt asked.
func TestLostRunOfAnInterruptedTurnCancelsIt(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	sub := h.submit(ctx, "s1", "th1")
	s := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"run.status", "turn.failed"}})
	c := h.claim(ctx, &controlv1.ClaimTurnRequest{LeaseTtl: durationpb.New(200 * time.Millisecond), Wait: durationpb.New(5 * time.Second)})
	if _, err := h.client.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "th1", Reason: "stop"}); err != nil {
		t.Fatal(err)
	}
	if lost := s.until("run.status"); lost.GetRunId() != c.RunId || lost.GetRunStatus().GetMetadata()["next"] != "cancel" {
		t.Fatalf("run.status = %v", lost)
	}
	failed := s.until("turn.failed")
	if failed.GetTurnId() != sub.Turn.TurnId || failed.GetTurnFailed().GetOutcome() != eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED {
		t.Fatalf("turn.failed = %v", failed)
	}
	if again := h.claim(ctx, &controlv1.ClaimTurnRequest{}); again.GetTurn() != nil {
		t.Fatalf("an interrupted turn was claimed: %v", again.GetTurn())
	}
	if at := h.attempts(ctx, sub.Turn.TurnId, failed.GetSequence()); attemptSummary(at) != "1:"+c.RunId+":w1:lost" {
		t.Fatalf("attempts = %v", attemptSummary(at))
	}
}

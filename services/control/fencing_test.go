package control_test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// leaseLost asserts err is FailedPrecondition with an ErrorInfo of reason
// LEASE_LOST, and returns its metadata.
func leaseLost(t *testing.T, what string, err error) map[string]string {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition {
		t.Fatalf("%s: got %v, want FailedPrecondition LEASE_LOST", what, err)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == "LEASE_LOST" {
			return info.GetMetadata()
		}
	}
	t.Fatalf("%s: %v has no ErrorInfo LEASE_LOST (details %v)", what, err, st.Details())
	return nil
}

// A worker stalls past its lease: the runtime records its run lost and a
// second worker claims the turn. Whatever the stale worker sends after the
// loss (heartbeats, step facts, process output, the turn's end) is refused
// with LEASE_LOST and none of it is recorded; only the current holder,
// with its run id AND its lease token, is heard.
func TestStaleWorkerIsFencedAfterItsRunIsLost(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	sub := h.submit(ctx, "s1", "th1")
	turnID := sub.Turn.TurnId
	s := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"run.status", "turn."}})
	// The lease is long enough for the reports below on a loaded machine;
	// then the worker stops heartbeating.
	stale := h.claim(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w1", LeaseTtl: durationpb.New(2 * time.Second), Wait: durationpb.New(5 * time.Second)})
	if stale.GetLeaseToken() == "" || stale.GetLeaseToken() == stale.GetRunId() {
		t.Fatalf("the claim handed out no lease token of its own: %v", stale)
	}
	// While it holds the lease, the worker is heard.
	h.reportRun(ctx, stale, delta(turnID, "before the stall"))
	// The run may be named by the events alone (each carries run_id).
	onEvents := delta(turnID, "run on the events")
	onEvents.RunId = stale.GetRunId()
	if _, err := h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{onEvents}, LeaseToken: stale.GetLeaseToken()}); err != nil {
		t.Fatalf("a report naming its run on its events: %v", err)
	}
	// Reports for a claimed turn must name the run and carry its token.
	_, err := h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{delta(turnID, "no claim named")}})
	leaseLost(t, "a report without a run", err)
	_, err = h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{delta(turnID, "run id only")}, RunId: stale.GetRunId()})
	leaseLost(t, "a report with the run id but no token", err)

	// The worker stalls; the sweeper records the run lost.
	lost := s.until("run.status")
	for lost.GetRunStatus().GetPhase() != "lost" {
		lost = s.until("run.status")
	}
	if lost.GetRunId() != stale.GetRunId() {
		t.Fatalf("lost run %s, want %s", lost.GetRunId(), stale.GetRunId())
	}
	staleFacts := map[string]*eventsv1.RuntimeEvent{
		"a step fact":    delta(turnID, "stale step"),
		"process output": {Type: "process.output", TurnId: turnID, ProcessId: "proc_stale", RunId: stale.GetRunId(), Payload: &eventsv1.RuntimeEvent_ProcessOutput{ProcessOutput: &eventsv1.ProcessOutput{Stream: "stdout", Preview: "stale output"}}},
		"the turn's end": completed(turnID),
	}
	refuseAll := func(when string) {
		t.Helper()
		_, err := h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: turnID, RunId: stale.GetRunId(), LeaseToken: stale.GetLeaseToken()})
		leaseLost(t, "the stale heartbeat "+when, err)
		for what, ev := range staleFacts {
			_, err := h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{ev}, RunId: stale.GetRunId(), LeaseToken: stale.GetLeaseToken()})
			if md := leaseLost(t, "the stale worker's "+what+" "+when, err); md["run_id"] != stale.GetRunId() {
				t.Errorf("LEASE_LOST metadata %v does not name the stale run", md)
			}
		}
	}
	refuseAll("after the loss")

	// A second worker takes the turn over.
	current := h.claim(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w2", Wait: durationpb.New(5 * time.Second)})
	if current.GetTurn().GetTurnId() != turnID || current.GetRunId() == stale.GetRunId() || current.GetLeaseToken() == stale.GetLeaseToken() {
		t.Fatalf("second claim = %v", current)
	}
	refuseAll("after another worker claimed the turn")
	// The current run's id is in every event a viewer sees; without its
	// token it is not enough to speak for the run.
	_, err = h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{delta(turnID, "borrowed run id")}, RunId: current.GetRunId(), LeaseToken: stale.GetLeaseToken()})
	if md := leaseLost(t, "the current run id with the stale token", err); md["run_id"] != current.GetRunId() {
		t.Errorf("metadata %v", md)
	}
	_, err = h.client.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{delta(turnID, "stale run id")}, RunId: stale.GetRunId(), LeaseToken: current.GetLeaseToken()})
	if md := leaseLost(t, "the stale run id with the current token", err); md["current_run_id"] != current.GetRunId() {
		t.Errorf("LEASE_LOST metadata %v does not name the current run", md)
	}
	if _, err := h.client.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: turnID, RunId: current.GetRunId(), LeaseToken: current.GetLeaseToken()}); err != nil {
		t.Fatalf("the holder's heartbeat: %v", err)
	}
	done := completed(turnID)
	done.RunId = current.GetRunId()
	end := h.reportRun(ctx, current, delta(turnID, "current step"), done)

	// Nothing the stale worker sent after the loss was recorded.
	all := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	var texts []string
	ends := 0
	for {
		ev := all.next().GetEvent()
		if ev == nil {
			continue
		}
		if ev.GetType() == "model.delta" {
			texts = append(texts, ev.GetModelDelta().GetText())
		}
		if ev.GetProcessId() == "proc_stale" {
			t.Errorf("the stale worker's process output was recorded: %v", ev)
		}
		if ev.GetType() == "turn.completed" {
			ends++
			if ev.GetRunId() != current.GetRunId() {
				t.Errorf("the turn ended by run %s, want the holder %s", ev.GetRunId(), current.GetRunId())
			}
		}
		if ev.GetSequence() >= end.GetSequence() {
			break
		}
	}
	if want := []string{"before the stall", "run on the events", "current step"}; !slices.Equal(texts, want) || ends != 1 {
		t.Fatalf("recorded deltas %q and %d turn ends; want only the holders' %q and one end", texts, ends, want)
	}
}

// BenchmarkReportFenced: what fencing adds to ReportEvents. One step fact
// per call on a claimed turn (fenced: the claims read model and the lease
// store are consulted inside the decision) and on a turn a host started
// itself (not fenced), next to a raw JetStream publish in the same run.
func BenchmarkReportFenced(b *testing.B) {
	h := newHarnessOn(b, true)
	ctx := acme(b)
	js := rawJetStream(b, h)
	h.submit(ctx, "s1", "claimed")
	claim := h.claim(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w1", LeaseTtl: durationpb.New(time.Hour), Wait: durationpb.New(5 * time.Second)})
	plain := h.submit(ctx, "s1", "plain").Turn
	h.report(ctx, started(plain.TurnId))
	payload := make([]byte, 256)
	var fenced, unfenced, raw time.Duration
	b.ResetTimer()
	timed := func(f func()) time.Duration { t0 := time.Now(); f(); return time.Since(t0) }
	fence := func() { h.reportRun(ctx, claim, delta(claim.GetTurn().GetTurnId(), "x")) }
	noFence := func() { h.report(ctx, delta(plain.TurnId, "x")) }
	for i := 0; i < b.N; i++ {
		// Alternate which goes first: the second of two reports in a row
		// may wait for the read model to take the first.
		if i%2 == 0 {
			fenced += timed(fence)
			unfenced += timed(noFence)
		} else {
			unfenced += timed(noFence)
			fenced += timed(fence)
		}
		raw += timed(func() {
			if _, err := js.Publish(ctx, "raw.report", payload); err != nil {
				b.Fatal(err)
			}
		})
	}
	n := float64(b.N)
	b.ReportMetric(float64(fenced.Microseconds())/n, "fenced-µs/report")
	b.ReportMetric(float64(unfenced.Microseconds())/n, "unfenced-µs/report")
	b.ReportMetric(float64(raw.Microseconds())/n, "raw-publish-µs")
	b.ReportMetric(float64(fenced)/float64(unfenced), "fenced/unfenced")
	b.ReportMetric(float64(fenced)/float64(raw), "fenced/raw")
	b.ReportMetric(0, "ns/op")
}

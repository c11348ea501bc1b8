package control_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/agentruntime/agentruntime/pkg/eventlog"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func processEvent(turn, process, typ string, payload any) *eventsv1.RuntimeEvent {
	ev := &eventsv1.RuntimeEvent{Type: typ, TurnId: turn, ProcessId: process, RunId: "run_w1"}
	switch p := payload.(type) {
	case *eventsv1.ProcessStarted:
		ev.Payload = &eventsv1.RuntimeEvent_ProcessStarted{ProcessStarted: p}
	case *eventsv1.ProcessCompleted:
		ev.Payload = &eventsv1.RuntimeEvent_ProcessCompleted{ProcessCompleted: p}
	}
	return ev
}

// WriteProcessStdin and TerminateProcess record their requests on the
// process's thread (what the holding worker watches), only for a running
// process of a running turn of the caller's tenant.
func TestProcessRequestsReachTheThread(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	sub := h.submit(ctx, "s1", "th1")
	turn := sub.Turn.TurnId
	h.report(ctx, started(turn), processEvent(turn, "proc_1", "process.started", &eventsv1.ProcessStarted{Command: "cat", Cwd: "/w"}))
	watch := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", ThreadId: "th1", TypePrefixes: []string{"process.input", "thread.updated"},
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})

	// Right after process.started: the read model may lag; the request
	// still finds the process.
	w, err := h.client.WriteProcessStdin(ctx, &controlv1.WriteProcessStdinRequest{ProcessId: "proc_1", Data: []byte("hello\n")})
	if err != nil || w.GetSequence() == 0 || w.GetEventId() == "" {
		t.Fatalf("WriteProcessStdin = %v, %v", w, err)
	}
	in := watch.until("process.input")
	uri := in.GetRefs()["input_ref"]
	if in.GetProcessId() != "proc_1" || in.GetTurnId() != turn || in.GetRunId() != "run_w1" || in.GetProcessInput().GetPreview() != "hello\n" ||
		!strings.Contains(uri, "/output/acme/s1/"+turn+"/") || in.GetEventId() != w.GetEventId() {
		t.Fatalf("process.input = %v", in)
	}
	if got := h.readAll(ctx, uri, 0); string(got) != "hello\n" {
		t.Fatalf("stored stdin = %q", got)
	}

	// Another tenant: no such process, no write, no object.
	_, err = h.client.WriteProcessStdin(globex(t), &controlv1.WriteProcessStdinRequest{ProcessId: "proc_1", Data: []byte("x")})
	assertCode(t, err, codes.NotFound, "proc_1")
	_, err = h.client.TerminateProcess(globex(t), &controlv1.TerminateProcessRequest{ProcessId: "proc_1"})
	assertCode(t, err, codes.NotFound, "proc_1")
	_, err = h.client.ReadOutput(globex(t), &controlv1.ReadOutputRequest{Uri: uri})
	assertCode(t, err, codes.NotFound, "")
	_, err = h.client.WriteProcessStdin(ctx, &controlv1.WriteProcessStdinRequest{ProcessId: "proc_nope", Data: []byte("x")})
	assertCode(t, err, codes.NotFound, "proc_nope")
	// Validation names the field.
	_, err = h.client.WriteProcessStdin(ctx, &controlv1.WriteProcessStdinRequest{ProcessId: "proc_1"})
	assertCode(t, err, codes.InvalidArgument, "data")
	_, err = h.client.TerminateProcess(ctx, &controlv1.TerminateProcessRequest{ProcessId: "bad id"})
	assertCode(t, err, codes.InvalidArgument, "process_id")

	term, err := h.client.TerminateProcess(ctx, &controlv1.TerminateProcessRequest{ProcessId: "proc_1", Reason: "enough"})
	if err != nil || !term.GetAccepted() {
		t.Fatalf("TerminateProcess = %v, %v", term, err)
	}
	u := watch.until("thread.updated")
	if u.GetProcessId() != "proc_1" || u.GetThreadUpdated().GetChange() != "process_terminate_requested" || u.GetThreadUpdated().GetReason() != "enough" {
		t.Fatalf("thread.updated = %v", u)
	}
	// Asked again while pending: nothing new.
	again, err := h.client.TerminateProcess(ctx, &controlv1.TerminateProcessRequest{ProcessId: "proc_1"})
	if err != nil || again.GetAccepted() {
		t.Fatalf("second TerminateProcess = %v, %v", again, err)
	}

	// The worker reports the end: the process takes no more requests.
	h.report(ctx, processEvent(turn, "proc_1", "process.completed", &eventsv1.ProcessCompleted{ExitCode: 0}))
	_, err = h.client.WriteProcessStdin(ctx, &controlv1.WriteProcessStdinRequest{ProcessId: "proc_1", Data: []byte("late")})
	assertCode(t, err, codes.FailedPrecondition, "PROCESS_ENDED")

	// A process whose turn ended (its worker died before saying so) has no
	// holder any more.
	h.report(ctx, processEvent(turn, "proc_2", "process.started", &eventsv1.ProcessStarted{Command: "sleep 60"}), completed(turn))
	_, err = h.client.TerminateProcess(ctx, &controlv1.TerminateProcessRequest{ProcessId: "proc_2"})
	assertCode(t, err, codes.FailedPrecondition, "TURN_ENDED")
}

// A run recorded lost takes its processes with it: they are "lost", and
// requests for them are refused rather than recorded for nobody.
func TestProcessesOfALostRunAreLost(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	sub := h.submit(ctx, "s1", "th1")
	turn := sub.Turn.TurnId
	h.report(ctx, started(turn), processEvent(turn, "proc_1", "process.started", &eventsv1.ProcessStarted{Command: "cat"}))
	other := processEvent(turn, "proc_2", "process.started", &eventsv1.ProcessStarted{Command: "cat"})
	other.RunId = "run_w2" // another run's process is not touched
	h.report(ctx, other)
	// The sweeper writes this when a lease lapses; here directly.
	lost := &eventsv1.RuntimeEvent{Type: "run.status", TenantId: "acme", SessionId: "s1", ThreadId: "th1", TurnId: turn, RunId: "run_w1",
		Payload: &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{Phase: "lost"}}}
	appended, err := h.log.Append(context.Background(), eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "thread", ID: "th1"}, eventlog.Any, lost)
	if err != nil {
		t.Fatal(err)
	}
	h.threadRead(ctx, "s1", "th1", appended[0].Sequence) // the loss is projected
	_, err = h.client.WriteProcessStdin(ctx, &controlv1.WriteProcessStdinRequest{ProcessId: "proc_1", Data: []byte("x")})
	assertCode(t, err, codes.FailedPrecondition, "PROCESS_ENDED")
	if _, err := h.client.WriteProcessStdin(ctx, &controlv1.WriteProcessStdinRequest{ProcessId: "proc_2", Data: []byte("x")}); err != nil {
		t.Fatalf("another run's process: %v", err)
	}
}

package worker_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

const echoScript = `
model: scripted
turns:
  - steps:
      - text: "Starting an echo process."
        tool_calls: [{name: shell, arguments: {command: "while read line; do echo \"echo: $line\"; done", background: true}}]
      - text: "Waiting for it."
        tool_calls: [{name: process_wait, arguments: {timeout_ms: 60000}}]
      - text: "The process ended."
`

// A background process that echoes its stdin: the turn starts it, a
// client writes to it and sees the echo, terminates it and sees it end;
// the turn then finishes.
func TestBackgroundProcessStdinAndTerminate(t *testing.T) {
	rt := startRuntime(t)
	rt.startWorker(t, scripted(t, echoScript), workspace(t))
	tl := rt.follow(t, "s1")
	ctx := context.Background()
	if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1", Input: text("run an echo server")}); err != nil {
		t.Fatal(err)
	}
	// Running a command asks, by the default policy.
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once")
	started := tl.until("process.started")
	id := started.GetProcessId()
	if id == "" || started.GetToolCallId() == "" || !strings.Contains(started.GetProcessStarted().GetCommand(), "while read line") {
		t.Fatalf("process.started = %v", started)
	}
	if _, err := rt.control.WriteProcessStdin(ctx, &controlv1.WriteProcessStdinRequest{ProcessId: id, Data: []byte("hello\n")}); err != nil {
		t.Fatal(err)
	}
	in := tl.until("process.input")
	if in.GetProcessId() != id || in.GetProcessInput().GetPreview() != "hello\n" || in.GetRefs()["input_ref"] == "" {
		t.Fatalf("process.input = %v", in)
	}
	out := tl.until("process.output")
	if out.GetProcessId() != id || out.GetProcessOutput().GetStream() != "stdout" || out.GetProcessOutput().GetPreview() != "echo: hello\n" {
		t.Fatalf("process.output = %v", out)
	}
	resp, err := rt.control.TerminateProcess(ctx, &controlv1.TerminateProcessRequest{ProcessId: id, Reason: "done testing"})
	if err != nil || !resp.GetAccepted() {
		t.Fatalf("TerminateProcess = %v, %v", resp, err)
	}
	term := tl.until("process.terminated")
	if term.GetProcessId() != id || term.GetProcessTerminated().GetReason() != "done testing" || term.GetProcessTerminated().GetSignal() != "SIGKILL" {
		t.Fatalf("process.terminated = %v", term)
	}
	done := tl.until("turn.completed")
	if done.GetTurnCompleted().GetSummary() != "The process ended." {
		t.Fatalf("turn.completed = %v", done)
	}
	// The model's next steps run concurrently with the process; what is
	// ordered is the process's own life, and the wait's answer after its end.
	inOrder(t, testkit.Types(tl.seen), "tool.started", "action.required", "process.started", "process.input", "process.output",
		"thread.updated", "process.terminated", "tool.result", "turn.completed")
	inOrder(t, testkit.Types(tl.seen), "process.started", "tool.result", "tool.started", "tool.result", "turn.completed")
	// process_wait told the model how it ended, with its last output.
	var waited string
	for _, ev := range tl.seen {
		if ev.GetType() == "tool.result" {
			waited = ev.GetToolResult().GetPreview()
		}
	}
	if !strings.Contains(waited, id+": terminated (done testing)") || !strings.Contains(waited, "echo: hello") {
		t.Fatalf("process_wait answered %q", waited)
	}
	// An ended process takes no more input.
	_, err = rt.control.WriteProcessStdin(ctx, &controlv1.WriteProcessStdinRequest{ProcessId: id, Data: []byte("late\n")})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "already ended") {
		t.Fatalf("WriteProcessStdin after the end = %v", err)
	}
}

const leftRunningScript = `
model: scripted
turns:
  - steps:
      - tool_calls: [{name: shell, arguments: {command: "sleep 600", background: true}}]
      - text: "Leaving it running."
`

// A process still running when its turn ends is killed and reported
// terminated before the turn's end.
func TestBackgroundProcessEndsWithItsTurn(t *testing.T) {
	rt := startRuntime(t)
	rt.startWorker(t, scripted(t, leftRunningScript), workspace(t))
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("sleep")}); err != nil {
		t.Fatal(err)
	}
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once")
	id := tl.until("process.started").GetProcessId()
	term := tl.until("process.terminated")
	if term.GetProcessId() != id || term.GetProcessTerminated().GetReason() != "the turn ended" {
		t.Fatalf("process.terminated = %v", term)
	}
	tl.until("turn.completed")
	_, err := rt.control.TerminateProcess(context.Background(), &controlv1.TerminateProcessRequest{ProcessId: id})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("TerminateProcess after the end = %v", err)
	}
}

const waitForeverScript = `
model: scripted
turns:
  - steps:
      - tool_calls: [{name: shell, arguments: {command: "sleep 600", background: true}}]
      - tool_calls: [{name: process_wait, arguments: {timeout_ms: 600000}}]
      - text: "unreachable"
`

// An interrupt while the model waits on a process stops both: the wait
// is cancelled, the process killed and reported terminated, then the turn
// ends cancelled.
func TestInterruptTerminatesTheTurnsProcesses(t *testing.T) {
	rt := startRuntime(t)
	rt.startWorker(t, scripted(t, waitForeverScript), workspace(t))
	tl := rt.follow(t, "s1")
	ctx := context.Background()
	if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("wait")}); err != nil {
		t.Fatal(err)
	}
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once")
	id := tl.until("process.started").GetProcessId()
	// The wait has started once its call is announced.
	for ev := tl.until("tool.started"); ev.GetToolStarted().GetToolName() != "process_wait"; ev = tl.until("tool.started") {
	}
	if _, err := rt.control.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "main", Reason: "stop"}); err != nil {
		t.Fatal(err)
	}
	term := tl.until("process.terminated")
	if term.GetProcessId() != id || term.GetProcessTerminated().GetReason() != "the turn was interrupted" {
		t.Fatalf("process.terminated = %v", term)
	}
	var end *eventsv1.RuntimeEvent
	for end == nil {
		m, err := tl.stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ev := m.GetEvent(); ev.GetType() == "turn.failed" {
			end = ev
		} else if ev != nil {
			tl.seen = append(tl.seen, ev)
		}
	}
	if end.GetTurnFailed().GetOutcome() != eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED {
		t.Fatalf("turn.failed = %v", end)
	}
	inOrder(t, testkit.Types(tl.seen), "thread.updated", "tool.failed", "process.terminated")
}

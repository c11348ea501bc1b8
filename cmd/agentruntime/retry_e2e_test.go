package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// startWorker runs `agentruntime worker` as its own process.
func startWorker(t *testing.T, addr, ws, id string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(binary, "worker", "--addr", addr, "--workspace", ws, "--worker-id", id, "--lease-ttl", "1500ms")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker %s output:\n%s", id, out.String())
		}
	})
	return cmd, &out
}

// A worker killed with SIGKILL while its turn waits for an approval: its
// run becomes lost (the lease lapses, nobody reports for it), the
// question it asked is cancelled, a second worker process claims the turn
// as attempt 2, asks again, and completes it once approved. The history
// holds both attempts, and so does the attempts read model.
func TestWorkerKilledMidTurnIsRetriedByAnotherWorker(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# A project\nIt says hello.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker")
	client := controlv1.NewControlServiceClient(dial(t, dev.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	stream, err := client.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: "default", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1,
		TypePrefixes: []string{"turn.", "run.status", "action.", "tool.started"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var history []*eventsv1.RuntimeEvent
	next := func(typ string) *eventsv1.RuntimeEvent {
		t.Helper()
		for {
			m, err := stream.Recv()
			if err != nil {
				t.Fatalf("waiting for %s: %v (saw %d events)\n%s", typ, err, len(history), dev.Output())
			}
			if ev := m.GetEvent(); ev != nil {
				history = append(history, ev)
				if ev.GetType() == typ {
					return ev
				}
			}
		}
	}

	w1, _ := startWorker(t, dev.Addr, ws, "w1")
	cli(t, "submit", "--addr", dev.Addr, "write notes about this project")
	started1 := next("turn.started")
	asked1 := next("action.required")
	if started1.GetTurnStarted().GetWorkerId() != "w1" || asked1.GetTurnId() != started1.GetTurnId() {
		t.Fatalf("first attempt: %v / %v", started1, asked1)
	}
	turnID, run1 := started1.GetTurnId(), started1.GetRunId()

	// Kill the worker mid-turn: it cannot report anything.
	if err := w1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = w1.Wait()
	if ws, ok := w1.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("worker 1 did not die by a signal: %v", w1.ProcessState)
	}
	startWorker(t, dev.Addr, ws, "w2")

	lost := next("run.status")
	for lost.GetRunStatus().GetPhase() != "lost" { // e.g. a default-model notice of run 1
		lost = next("run.status")
	}
	if lost.GetRunId() != run1 || lost.GetRunStatus().GetPhase() != "lost" || lost.GetRunStatus().GetMetadata()["next"] != "retry" {
		t.Fatalf("after the kill: %v", lost)
	}
	cancelled := next("action.resolved")
	if cancelled.GetActionId() != asked1.GetActionId() || cancelled.GetActionResolved().GetOutcome() != eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED {
		t.Fatalf("the dead worker's question: %v", cancelled)
	}
	started2 := next("turn.started")
	if started2.GetTurnId() != turnID || started2.GetRunId() == run1 || started2.GetTurnStarted().GetWorkerId() != "w2" {
		t.Fatalf("second attempt: %v", started2)
	}
	asked2 := next("action.required")
	if asked2.GetRunId() != "" && asked2.GetRunId() != started2.GetRunId() {
		t.Fatalf("second question belongs to run %s", asked2.GetRunId())
	}
	if out := cli(t, "approve", "--addr", dev.Addr); !strings.Contains(out, asked2.GetActionId()) {
		t.Fatalf("approve said %q, want %s", out, asked2.GetActionId())
	}
	done := next("turn.completed")
	if done.GetTurnId() != turnID || done.GetRunId() != started2.GetRunId() {
		t.Fatalf("turn.completed = %v", done)
	}
	b, err := os.ReadFile(filepath.Join(ws, "NOTES.md"))
	if err != nil || !strings.Contains(string(b), "asked for permission") {
		t.Fatalf("NOTES.md = %q, %v", b, err)
	}

	// Both attempts are in the history, each with its own run.
	runs := map[string]int{}
	for _, ev := range history {
		if ev.GetType() == "tool.started" && ev.GetTurnId() == turnID {
			runs[ev.GetRunId()]++
		}
	}
	if runs[run1] == 0 || runs[started2.GetRunId()] == 0 {
		t.Fatalf("tool calls by run: %v (run1 %s, run2 %s)", runs, run1, started2.GetRunId())
	}
	at, err := client.GetTurnAttempts(ctx, &controlv1.GetTurnAttemptsRequest{TurnId: turnID, MinSequence: done.GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	got := at.GetAttempts().GetAttempts()
	if len(got) != 2 || got[0].GetRunId() != run1 || got[0].GetStatus() != controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_LOST || got[0].GetWorkerId() != "w1" ||
		got[1].GetRunId() != started2.GetRunId() || got[1].GetStatus() != controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_COMPLETED || got[1].GetWorkerId() != "w2" {
		t.Fatalf("attempts = %v", got)
	}
	// The readable timeline says so too.
	text := cli(t, "watch", "--addr", dev.Addr, "--until-turn-ends")
	for _, want := range []string{"attempt 1 lost", "attempt 2 of 3"} {
		if !strings.Contains(text, want) {
			t.Fatalf("timeline lacks %q:\n%s", want, text)
		}
	}
}

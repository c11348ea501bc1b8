package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// startWorker runs `agentruntime worker` as its own process.
func startWorker(t *testing.T, addr, ws, id string, extra ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(binary, append([]string{"worker", "--addr", addr, "--workspace", ws, "--worker-id", id, "--lease-ttl", "1500ms"}, extra...)...)
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

// slowScript: the agent runs a three-second shell command (asked first),
// then writes NOTES.md (asked too), then finishes.
const slowScript = `
model: scripted
turns:
  - steps:
      - tool_calls: [{name: shell, arguments: {command: "sleep 3"}}]
      - tool_calls: [{name: write_file, arguments: {path: NOTES.md, content: "slept, then asked for permission to write this"}}]
      - text: done
`

// A worker killed with SIGKILL while it runs a turn: its run becomes lost
// (the lease lapses, nobody reports for it), a second worker process
// claims the turn as the next attempt and continues it from the
// checkpoint the turn was last parked with (its approval, given before the
// kill, still holds), and completes it once the write is approved. The
// history holds every run, and so does the attempts read model.
func TestWorkerKilledMidTurnIsRetriedByAnotherWorker(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# A project\nIt says hello.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "slow.yaml")
	if err := os.WriteFile(script, []byte(slowScript), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker")
	client := controlv1.NewControlServiceClient(dial(t, dev.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	stream, err := client.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: "default", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1,
		TypePrefixes: []string{"turn.", "run.status", "action.", "tool."},
	})
	if err != nil {
		t.Fatal(err)
	}
	var history []*eventsv1.RuntimeEvent
	next := func(typ, phase string) *eventsv1.RuntimeEvent {
		t.Helper()
		for {
			m, err := stream.Recv()
			if err != nil {
				t.Fatalf("waiting for %s %s: %v (saw %d events)\n%s", typ, phase, err, len(history), dev.Output())
			}
			if ev := m.GetEvent(); ev != nil {
				history = append(history, ev)
				if ev.GetType() == typ && (phase == "" || ev.GetRunStatus().GetPhase() == phase) {
					return ev
				}
			}
		}
	}

	w1, _ := startWorker(t, dev.Addr, ws, "w1", "--script", script)
	cli(t, "submit", "--addr", dev.Addr, "sleep, then write notes")
	started1 := next("turn.started", "")
	turnID := started1.GetTurnId()
	next("action.required", "")
	next("run.status", "parked")
	cli(t, "approve", "--addr", dev.Addr) // the shell command
	resumed := next("run.status", "resumed")
	if resumed.GetRunStatus().GetMetadata()["worker_id"] != "w1" {
		t.Fatalf("resumed by %v, want w1 (the only worker)", resumed)
	}
	run1 := resumed.GetRunId()
	// Kill the worker while the command runs: it cannot report anything.
	if err := w1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = w1.Wait()
	if ws, ok := w1.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("worker 1 did not die by a signal: %v", w1.ProcessState)
	}
	startWorker(t, dev.Addr, ws, "w2", "--script", script)

	lost := next("run.status", "lost")
	if lost.GetRunId() != run1 || lost.GetRunStatus().GetMetadata()["next"] != "retry" {
		t.Fatalf("after the kill: %v", lost)
	}
	retry := next("run.status", "retrying")
	if len(retry.GetRunStatus().GetCheckpoints()) != 1 || retry.GetRunStatus().GetMetadata()["worker_id"] != "w2" {
		t.Fatalf("the retry does not continue from the checkpoint: %v", retry)
	}
	asked := next("action.required", "") // the write; the command's approval held
	if out := cli(t, "approve", "--addr", dev.Addr); !strings.Contains(out, asked.GetActionId()) {
		t.Fatalf("approve said %q, want %s", out, asked.GetActionId())
	}
	done := next("turn.completed", "")
	if done.GetTurnId() != turnID {
		t.Fatalf("turn.completed = %v", done)
	}
	b, err := os.ReadFile(filepath.Join(ws, "NOTES.md"))
	if err != nil || !strings.Contains(string(b), "asked for permission") {
		t.Fatalf("NOTES.md = %q, %v", b, err)
	}
	// The command was asked about once: the retry reused the answer.
	asks := 0
	for _, ev := range history {
		if ev.GetType() == "action.required" {
			asks++
		}
	}
	if asks != 2 {
		t.Fatalf("%d approvals asked, want 2 (the command once, the write once)", asks)
	}
	at, err := client.GetTurnAttempts(ctx, &controlv1.GetTurnAttemptsRequest{TurnId: turnID, MinSequence: done.GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, a := range at.GetAttempts().GetAttempts() {
		statuses = append(statuses, a.GetWorkerId()+":"+strings.TrimPrefix(a.GetStatus().String(), "TURN_ATTEMPT_STATUS_"))
	}
	if got := strings.Join(statuses, " "); !strings.HasPrefix(got, "w1:PARKED w1:LOST w2:") || !strings.HasSuffix(got, "w2:COMPLETED") {
		t.Fatalf("runs = %s, want w1 parked, w1 lost, then w2 to completion", got)
	}
	// The readable timeline says so too.
	text := cli(t, "watch", "--addr", dev.Addr, "--until-turn-ends")
	for _, want := range []string{"lost", "attempt"} {
		if !strings.Contains(text, want) {
			t.Fatalf("timeline lacks %q:\n%s", want, text)
		}
	}
}

// drainScript: the agent runs a shell command (asked first) that waits
// until the workspace holds "release", then writes NOTES.md (asked too),
// then finishes: the worker is stopped while the command surely runs.
const drainScript = `
model: scripted
turns:
  - steps:
      - tool_calls: [{name: shell, arguments: {command: "while [ ! -e release ]; do sleep 0.05; done"}}]
      - tool_calls: [{name: write_file, arguments: {path: NOTES.md, content: "waited, then asked for permission to write this"}}]
      - text: done
`

// A worker process that gets SIGTERM while it runs a turn drains: its
// health says NOT_SERVING from the first moment, it finishes the running
// command, hands the turn back at the step boundary and exits cleanly;
// another worker finishes the turn. Nothing is lost and the command ran
// once.
func TestAWorkerDrainsOnSIGTERM(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# A project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "drain.yaml")
	if err := os.WriteFile(script, []byte(drainScript), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker")
	w1, addr := startWorkerWithHealth(t, dev.Addr, ws, "w1", "--script", script, "--shutdown-timeout", "60s")
	hc := healthpb.NewHealthClient(dial(t, addr))
	status := func() healthpb.HealthCheckResponse_ServingStatus {
		resp, err := hc.Check(testkit.Context(t), &healthpb.HealthCheckRequest{})
		if err != nil {
			return healthpb.HealthCheckResponse_UNKNOWN
		}
		return resp.GetStatus()
	}
	if s := status(); s != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("a running worker's health: %v", s)
	}
	cli(t, "submit", "--addr", dev.Addr, "sleep, then write notes")
	followDefault(t, dev.Addr, func(ev *eventsv1.RuntimeEvent) bool { return ev.GetRunStatus().GetPhase() == "parked" })
	cli(t, "approve", "--addr", dev.Addr) // the command that waits for release
	followDefault(t, dev.Addr, func(ev *eventsv1.RuntimeEvent) bool { return ev.GetRunStatus().GetPhase() == "resumed" })
	if err := w1.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the draining worker's health says NOT_SERVING", func() bool {
		return status() == healthpb.HealthCheckResponse_NOT_SERVING
	})
	// The drain waits for the running command: let it end.
	if err := os.WriteFile(filepath.Join(ws, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w1.Wait(); err != nil {
		t.Fatalf("the worker did not exit cleanly after its drain: %v", err)
	}
	drained := followDefault(t, dev.Addr, func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetRunStatus().GetPhase() == "parked" && ev.GetRunStatus().GetMetadata()["reason"] == "drain"
	})
	startWorker(t, dev.Addr, ws, "w2", "--script", script)
	followDefault(t, dev.Addr, func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "action.required" && ev.GetSequence() > drained[len(drained)-1].GetSequence()
	})
	cli(t, "approve", "--addr", dev.Addr) // the write
	seen := followDefault(t, dev.Addr, func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "turn.completed" || ev.GetType() == "turn.failed"
	})
	if end := seen[len(seen)-1]; end.GetType() != "turn.completed" {
		t.Fatalf("the turn ended %v after %v", end, testkit.Types(seen))
	}
	results, lost := 0, 0
	for _, ev := range seen {
		if ev.GetType() == "tool.result" {
			results++
		}
		if ev.GetRunStatus().GetPhase() == "lost" {
			lost++
		}
	}
	if results != 2 || lost != 0 {
		t.Fatalf("%d tool.result (want 2: the command once, the write once), %d runs lost (want 0): %v", results, lost, testkit.Types(seen))
	}
}

// startWorkerWithHealth runs `agentruntime worker --health-listen
// 127.0.0.1:0` and answers the process and the health address its banner
// gives.
func startWorkerWithHealth(t *testing.T, addr, ws, id string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"worker", "--addr", addr, "--workspace", ws, "--worker-id", id, "--health-listen", "127.0.0.1:0"}, extra...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer // written by the process's copier, read after Wait
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker %s stderr:\n%s", id, errOut.String())
		}
	})
	found := make(chan string, 1)
	go func() {
		health := regexp.MustCompile(`^\s*health\s+(\S+) \(grpc\.health`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := health.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		close(found)
	}()
	a, ok := <-found
	if !ok {
		t.Fatalf("worker %s gave no health address", id)
	}
	return cmd, a
}

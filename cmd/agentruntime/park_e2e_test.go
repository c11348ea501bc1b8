package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// followDefault follows the default session from the start until stop says so.
func followDefault(t *testing.T, addr string, stop func(*eventsv1.RuntimeEvent) bool) []*eventsv1.RuntimeEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := controlv1.NewControlServiceClient(dial(t, addr)).SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: "default", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if err != nil {
		t.Fatal(err)
	}
	var seen []*eventsv1.RuntimeEvent
	for {
		m, err := s.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", testkit.Types(seen), err)
		}
		if ev := m.GetEvent(); ev != nil {
			seen = append(seen, ev)
			if stop(ev) {
				return seen
			}
		}
	}
}

// The README tour across a restart: `agentruntime dev` is stopped (SIGTERM)
// while the turn waits for the approval of its write; started again on
// the same data dir, `agentruntime approve` finds the approval, the turn
// resumes and completes, and the approved write happens once.
func TestAWaitingTurnSurvivesARestartOfDev(t *testing.T) {
	ws, data := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# A project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", data, "--workspace", ws)
	cli(t, "submit", "--addr", dev.Addr, "write notes about this project")
	followDefault(t, dev.Addr, func(ev *eventsv1.RuntimeEvent) bool { return ev.GetRunStatus().GetPhase() == "parked" })
	if err := dev.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := dev.Cmd.Wait(); err != nil {
		t.Fatalf("dev did not stop cleanly on SIGTERM: %v", err)
	}
	dev = start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", data, "--workspace", ws)
	cli(t, "approve", "--addr", dev.Addr)
	seen := followDefault(t, dev.Addr, func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "turn.completed" || ev.GetType() == "turn.failed"
	})
	if end := seen[len(seen)-1]; end.GetType() != "turn.completed" {
		t.Fatalf("the turn ended %v after %v", end, testkit.Types(seen))
	}
	writes := 0
	for _, ev := range seen {
		if ev.GetType() == "tool.result" {
			writes++
		}
	}
	if writes != 2 {
		t.Fatalf("%d tool.result, want 2 (the read, then the approved write once): %v", writes, testkit.Types(seen))
	}
	if _, err := os.Stat(filepath.Join(ws, "NOTES.md")); err != nil {
		t.Fatalf("the approved write did not happen: %v", err)
	}
}

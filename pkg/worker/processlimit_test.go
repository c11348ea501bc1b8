package worker_test

import (
	"context"
	"strings"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

// Three background processes asked for in one step, in each of two turns.
const threeProcessesScript = `
model: scripted
turns:
  - steps:
      - tool_calls:
          - {name: shell, arguments: {command: "sleep 600", background: true}}
          - {name: shell, arguments: {command: "sleep 601", background: true}}
          - {name: shell, arguments: {command: "sleep 602", background: true}}
      - text: "Three asked."
  - steps:
      - tool_calls:
          - {name: shell, arguments: {command: "sleep 603", background: true}}
          - {name: shell, arguments: {command: "sleep 604", background: true}}
          - {name: shell, arguments: {command: "sleep 605", background: true}}
      - text: "Three asked again."
`

// Background processes are bounded per turn and per worker: a start beyond
// either bound fails limit_exceeded, naming the bound, and starts nothing;
// the processes of an ended turn give their slots back, so the next turn
// starts as many again.
func TestBackgroundProcessesAreBounded(t *testing.T) {
	for name, c := range map[string]struct {
		mod  func(*worker.Config)
		says string
	}{
		"per turn":   {func(c *worker.Config) { c.MaxTurnProcesses = 2 }, "this turn already runs 2 background processes"},
		"per worker": {func(c *worker.Config) { c.MaxProcesses = 2 }, "the worker already runs 2 background processes"},
	} {
		t.Run(name, func(t *testing.T) {
			rt := startRuntime(t)
			rt.startWorker(t, scripted(t, threeProcessesScript), workspace(t), c.mod)
			tl := rt.follow(t, "s1")
			run := func(turn string, calls int) (started, failed []*eventsv1.RuntimeEvent) {
				t.Helper()
				if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: turn, Input: text("start them")}); err != nil {
					t.Fatal(err)
				}
				for results := 0; results < calls; {
					ev := tl.next()
					switch ev.GetType() {
					case "action.required":
						respond(t, rt, ev.GetActionId(), "allow_once")
					case "process.started":
						started = append(started, ev)
					case "tool.failed":
						failed = append(failed, ev)
						results++
					case "tool.result":
						results++
					}
				}
				tl.until("turn.completed")
				return started, failed
			}
			// The second turn starts two again: the first turn's processes
			// ended with it and gave their slots back.
			for _, turn := range []string{"turn1", "turn2"} {
				started, failed := run(turn, 3)
				if len(started) != 2 || len(failed) != 1 {
					t.Fatalf("%s: three starts under a bound of 2: %d started, %d failed", turn, len(started), len(failed))
				}
				f := failed[0].GetToolFailed()
				if f.GetCategory() != "limit_exceeded" || !strings.Contains(f.GetMessage(), c.says) {
					t.Fatalf("%s: tool.failed = %v, want limit_exceeded saying %q", turn, f, c.says)
				}
			}
		})
	}
}

// next is the session's next event; a failed turn fails the test.
func (tl *timeline) next() *eventsv1.RuntimeEvent {
	tl.t.Helper()
	for {
		m, err := tl.stream.Recv()
		if err != nil {
			tl.t.Fatalf("next event after %v: %v", testkit.Types(tl.seen), err)
		}
		if ev := m.GetEvent(); ev != nil {
			tl.seen = append(tl.seen, ev)
			if ev.GetType() == "turn.failed" {
				tl.t.Fatalf("turn.failed: %v after %v", ev, testkit.Types(tl.seen))
			}
			return ev
		}
	}
}

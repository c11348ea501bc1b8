package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// The agent asks the user a question (request_user_input) and the turn is
// handed back; `agentruntime respond TEXT` answers the pending question,
// and the answer is the call's result: the turn completes.
func TestRespondAnswersTheAgentsQuestion(t *testing.T) {
	ws := t.TempDir()
	script := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(script, []byte(`
model: scripted
turns:
  - steps:
      - tool_calls: [{name: request_user_input, arguments: {question: "Which colour?"}}]
      - text: noted
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workspace", ws, "--script", script)
	cli(t, "submit", "--addr", dev.Addr, "ask me something")
	var asked *eventsv1.RuntimeEvent
	followDefault(t, dev.Addr, func(ev *eventsv1.RuntimeEvent) bool {
		if ev.GetType() == "action.required" {
			asked = ev
		}
		return ev.GetRunStatus().GetPhase() == "parked"
	})
	if asked.GetActionRequired().GetActionType() != "input" || asked.GetActionRequired().GetPrompt() != "Which colour?" {
		t.Fatalf("action.required = %v, want the question", asked)
	}
	// A decision the question does not offer is refused, saying which it offers.
	if out, err := exec.Command(binary, "respond", "--addr", dev.Addr, "--decision", "maybe", "teal").CombinedOutput(); err == nil ||
		!strings.Contains(string(out), `"maybe" is not offered; the action offers answer, no_answer`) {
		t.Fatalf("respond --decision maybe: err=%v\n%s", err, out)
	}
	if out := cli(t, "respond", "--addr", dev.Addr, "teal, please"); !strings.Contains(out, asked.GetActionId()+": answer") {
		t.Fatalf("respond said %q, want the action answered", out)
	}
	seen := followDefault(t, dev.Addr, func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "turn.completed" || ev.GetType() == "turn.failed"
	})
	if end := seen[len(seen)-1]; end.GetType() != "turn.completed" {
		t.Fatalf("the turn ended %v after %v", end, testkit.Types(seen))
	}
	var results []string
	for _, ev := range seen {
		if ev.GetType() == "tool.result" {
			results = append(results, ev.GetToolResult().GetPreview())
		}
	}
	if len(results) != 1 || results[0] != "teal, please" {
		t.Fatalf("tool.result previews %q, want the answer once", results)
	}
}

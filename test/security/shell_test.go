package security

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// shellAttackScript is a model that reads README.md with a read-only
// command, then asks sort to write its output outside the workspace
// (sort -o, once judged read-only and run without asking).
const shellAttackScript = `model: scripted
turns:
  - steps:
      - text: "Reading."
        tool_calls:
          - name: shell
            arguments: {command: "cat README.md"}
      - text: "Sorting."
        tool_calls:
          - name: shell
            arguments: {command: "sort -o %s README.md"}
      - text: "Done."
`

// TestShellCannotWriteOutsideWithoutAsking: through `agentruntime dev` and
// its in-process worker under the default policy, a model's `cat
// README.md` runs without asking, and its `sort -o <outside file>
// README.md` stops the turn at action.required: the outside file does not
// exist while the question is open, and after an operator denies it with
// `agentruntime deny` it still does not, and the call ends as
// tool.failed permission_denied.
func TestShellCannotWriteOutsideWithoutAsking(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("b\na\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(outside, "sorted")
	dev := startDev(t, ws, "--script", writeScript(t, fmt.Sprintf(shellAttackScript, victim)))
	runCLI(t, "submit", "--addr", dev.Addr, "sort the readme")

	asked := 0
	events := filesWatchTurn(t, dev.Addr, func(ev *eventsv1.RuntimeEvent) {
		if ev.GetType() != "action.required" {
			return
		}
		asked++
		// The turn waits on the question: nothing was written.
		if _, err := os.Lstat(victim); !os.IsNotExist(err) {
			t.Fatalf("%s exists before anyone answered: %v", victim, err)
		}
		runCLI(t, "deny", "--addr", dev.Addr)
	})
	if _, err := os.Lstat(victim); !os.IsNotExist(err) {
		t.Fatalf("%s exists after the denial: %v", victim, err)
	}
	if asked != 1 {
		t.Fatalf("%d questions, want 1 (for sort -o only)", asked)
	}
	commandOf := map[string]string{}
	outcome := map[string]string{}
	for _, ev := range events {
		switch ev.GetType() {
		case "tool.args":
			commandOf[ev.GetToolCallId()] = ev.GetToolArgs().GetSafeArgsJson()
		case "tool.result":
			outcome[ev.GetToolCallId()] = "result"
		case "tool.failed":
			outcome[ev.GetToolCallId()] = ev.GetToolFailed().GetCategory()
		}
	}
	if len(commandOf) != 2 {
		t.Fatalf("tool calls %v", commandOf)
	}
	for call, args := range commandOf {
		want := "result"
		if strings.Contains(args, "sort -o") {
			want = "permission_denied"
		}
		if outcome[call] != want {
			t.Errorf("%s: %q, want %q", args, outcome[call], want)
		}
	}
}

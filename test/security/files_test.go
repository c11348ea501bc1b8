package security

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// filesAttackScript is a model that, in one step, asks write_file for
// three paths a hostile repository prepared, then finishes.
const filesAttackScript = `model: scripted
turns:
  - steps:
      - text: "Writing the notes."
        tool_calls:
          - name: write_file
            arguments: {path: notes.txt, content: "notes of the agent"}
          - name: write_file
            arguments: {path: linked.txt, content: "pwned"}
          - name: write_file
            arguments: {path: escape/planted.txt, content: "pwned"}
      - text: "Done."
`

// A repository that ships links out of the workspace, attacked through the
// real interface: `agentruntime dev` with its in-process worker runs a
// turn whose model asks write_file for
//
//   - notes.txt, beside which notes.txt.agentruntime-tmp is a link to a
//     file outside (the name write_file once used for its temporary file),
//   - linked.txt, itself a link to that file,
//   - escape/planted.txt, where escape is a link to the outside directory,
//
// and an operator approves each write with `agentruntime approve`. The
// outside file keeps its content and nothing is created outside; notes.txt
// is written; the two others end as tool.failed sandbox_violation facts,
// each with its sandbox.violation.
func TestFileToolsCannotBeRedirectedOutOfTheWorkspace(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "bashrc")
	if err := os.WriteFile(victim, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"notes.txt.agentruntime-tmp": victim,
		"linked.txt":                 victim,
		"escape":                     outside,
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	dev := startDev(t, ws, "--script", writeScript(t, filesAttackScript))
	runCLI(t, "submit", "--addr", dev.Addr, "take notes on this repository")

	events := filesWatchTurn(t, dev.Addr, func(ev *eventsv1.RuntimeEvent) {
		if ev.GetType() == "action.required" {
			if out := runCLI(t, "approve", "--addr", dev.Addr); !strings.Contains(out, "allow_once") {
				t.Fatalf("approve said %q", out)
			}
		}
	})

	// The effect first: outside is as it was.
	if b, err := os.ReadFile(victim); err != nil || string(b) != "original\n" {
		t.Fatalf("the outside file is now %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "planted.txt")); !os.IsNotExist(err) {
		t.Fatalf("a file was created outside the workspace: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || string(b) != "notes of the agent" {
		t.Fatalf("notes.txt = %q, %v", b, err)
	}
	for _, link := range []string{"notes.txt.agentruntime-tmp", "linked.txt", "escape"} {
		if fi, err := os.Lstat(filepath.Join(ws, link)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is no longer the planted link: %v, %v", link, fi, err)
		}
	}

	// Then what the event log says about each call.
	pathOf := map[string]string{} // tool call id -> path asked for
	var approvals int
	var last string
	for _, ev := range events {
		last = ev.GetType()
		switch ev.GetType() {
		case "tool.args":
			var args struct{ Path string }
			if err := json.Unmarshal([]byte(ev.GetToolArgs().GetSafeArgsJson()), &args); err != nil {
				t.Fatalf("tool.args %q: %v", ev.GetToolArgs().GetSafeArgsJson(), err)
			}
			pathOf[ev.GetToolCallId()] = args.Path
		case "action.resolved":
			approvals++
		}
	}
	if last != "turn.completed" || approvals != 3 || len(pathOf) != 3 {
		t.Fatalf("the turn ended with %s after %d approvals of %d calls", last, approvals, len(pathOf))
	}
	for call, path := range pathOf {
		abs := filepath.Join(ws, path)
		var result, failed *eventsv1.RuntimeEvent
		var violation *eventsv1.SandboxViolation
		for _, ev := range events {
			if ev.GetToolCallId() != call {
				continue
			}
			switch ev.GetType() {
			case "tool.result":
				result = ev
			case "tool.failed":
				failed = ev
			case "sandbox.violation":
				violation = ev.GetSandboxViolation()
			}
		}
		if path == "notes.txt" {
			if result == nil || failed != nil {
				t.Errorf("write_file notes.txt: result %v, failed %v", result, failed)
			}
			continue
		}
		if f := failed.GetToolFailed(); f.GetCategory() != "sandbox_violation" || !strings.Contains(f.GetMessage(), abs) || result != nil {
			t.Errorf("write_file %s: tool.failed %v, result %v", path, f, result)
		}
		if violation.GetTarget() != abs || violation.GetKind() != eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_WRITE || !violation.GetBlocked() {
			t.Errorf("write_file %s: sandbox.violation %v", path, violation)
		}
	}
}

// filesWatchTurn follows the default session's events with `agentruntime
// watch --json --until-turn-ends` until the turn ends, calling on for each
// event as it comes, and returns them all.
func filesWatchTurn(t *testing.T, addr string, on func(*eventsv1.RuntimeEvent)) []*eventsv1.RuntimeEvent {
	t.Helper()
	watch := exec.Command(bin, "watch", "--addr", addr, "--json", "--until-turn-ends")
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watch.Process.Kill(); _ = watch.Wait() })
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	var events []*eventsv1.RuntimeEvent
	limit := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				if err := watch.Wait(); err != nil {
					t.Fatalf("watch --until-turn-ends: %v", err)
				}
				return events
			}
			ev := &eventsv1.RuntimeEvent{}
			if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(line, ev); err != nil {
				t.Fatalf("watch --json printed %q: %v", line, err)
			}
			events = append(events, ev)
			on(ev)
		case <-limit:
			var seen []string
			for _, ev := range events {
				seen = append(seen, ev.GetType())
			}
			t.Fatalf("the turn did not end; saw %v", seen)
		}
	}
}

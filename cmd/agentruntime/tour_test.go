package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func cli(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(binary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("agentruntime %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// The README tour on the real binary: `agentruntime dev` (with its
// in-process scripted worker), `submit`, `watch --json`, `approve`; the
// turn reads README.md, asks to write NOTES.md, and finishes once
// approved.
func TestTourSubmitWatchApprove(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# A project\nIt says hello.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workspace", ws)
	if !strings.Contains(dev.out.String(), "scripted (built-in demo script)") {
		t.Fatalf("banner does not name the worker:\n%s", dev.out.String())
	}
	out := cli(t, "submit", "--addr", dev.addr, "write notes about this project")
	if !strings.Contains(out, "in session default, thread main") {
		t.Fatalf("submit said %q", out)
	}
	watch := exec.Command(binary, "watch", "--addr", dev.addr, "--json", "--until-turn-ends")
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watch.Process.Kill(); _ = watch.Wait() })
	lines := make(chan map[string]any)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev map[string]any
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("watch --json printed %q: %v", sc.Text(), err)
				continue
			}
			lines <- ev
		}
	}()
	var seen []string
	next := func(typ string) map[string]any {
		t.Helper()
		timeout := time.After(60 * time.Second)
		for {
			select {
			case ev, ok := <-lines:
				if !ok {
					t.Fatalf("watch ended before %s; saw %v\n%s", typ, seen, dev.out.String())
				}
				seen = append(seen, ev["type"].(string))
				if ev["type"] == typ {
					return ev
				}
			case <-timeout:
				t.Fatalf("no %s; saw %v\n%s", typ, seen, dev.out.String())
			}
		}
	}
	next("action.required")
	if _, err := os.Stat(filepath.Join(ws, "NOTES.md")); !os.IsNotExist(err) {
		t.Fatalf("NOTES.md exists before approval: %v", err)
	}
	if out := cli(t, "approve", "--addr", dev.addr); !strings.Contains(out, "allow_once") {
		t.Fatalf("approve said %q", out)
	}
	done := next("turn.completed")
	if !strings.Contains(done["turnCompleted"].(map[string]any)["summary"].(string), "NOTES.md") {
		t.Fatalf("turn.completed = %v", done)
	}
	if err := watch.Wait(); err != nil {
		t.Fatalf("watch --until-turn-ends: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(ws, "NOTES.md"))
	if err != nil || !strings.Contains(string(b), "asked for permission") {
		t.Fatalf("NOTES.md = %q, %v", b, err)
	}
	// The readable timeline tells the same story.
	text := cli(t, "watch", "--addr", dev.addr, "--until-turn-ends")
	for _, want := range []string{"turn.started", "read_file", "permission.requested", "action.resolved", "write_file", "turn.completed"} {
		if !strings.Contains(text, want) {
			t.Fatalf("timeline lacks %q:\n%s", want, text)
		}
	}
	// Nothing is pending any more.
	if out, err := exec.Command(binary, "approve", "--addr", dev.addr).CombinedOutput(); err == nil || !strings.Contains(string(out), "nothing is waiting") {
		t.Fatalf("second approve: %v %s", err, out)
	}
}

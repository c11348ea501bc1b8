package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/spec/conformance"
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
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workspace", ws, "--metrics-listen", "127.0.0.1:0")
	metrics := metricsURL(t, dev)
	if !strings.Contains(dev.Output(), "scripted (built-in demo script)") {
		t.Fatalf("banner does not name the worker:\n%s", dev.Output())
	}
	out := cli(t, "submit", "--addr", dev.Addr, "write notes about this project")
	if !strings.Contains(out, "in session default, thread main") {
		t.Fatalf("submit said %q", out)
	}
	watch := exec.Command(binary, "watch", "--addr", dev.Addr, "--json", "--until-turn-ends")
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
					t.Fatalf("watch ended before %s; saw %v\n%s", typ, seen, dev.Output())
				}
				seen = append(seen, ev["type"].(string))
				if ev["type"] == typ {
					return ev
				}
			case <-timeout:
				t.Fatalf("no %s; saw %v\n%s", typ, seen, dev.Output())
			}
		}
	}
	// dev ships a registry for its demo model: routing decides.
	decided := next("routing.decided")
	if m := decided["routingDecided"].(map[string]any)["decision"].(map[string]any)["selectedModelId"]; m != "scripted" {
		t.Fatalf("routing.decided = %v, want the scripted model", decided)
	}
	next("action.required")
	// The operator sees the approval waiting.
	scrapeUntil(t, metrics, []sample{
		{family: "agentruntime_actions_pending", exact: 1},
		{family: "agentruntime_threads", labels: map[string]string{"status": "waiting_permission"}, exact: 1},
	})
	if slices.Contains(seen, "routing.not_possible") {
		t.Fatalf("routing was not possible: %v", seen)
	}
	if _, err := os.Stat(filepath.Join(ws, "NOTES.md")); !os.IsNotExist(err) {
		t.Fatalf("NOTES.md exists before approval: %v", err)
	}
	if out := cli(t, "approve", "--addr", dev.Addr); !strings.Contains(out, "allow_once") {
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
	text := cli(t, "watch", "--addr", dev.Addr, "--until-turn-ends")
	for _, want := range []string{"turn.started", "read_file", "permission.requested", "action.resolved", "write_file", "turn.completed"} {
		if !strings.Contains(text, want) {
			t.Fatalf("timeline lacks %q:\n%s", want, text)
		}
	}
	// Nothing is pending any more.
	if out, err := exec.Command(binary, "approve", "--addr", dev.Addr).CombinedOutput(); err == nil || !strings.Contains(string(out), "nothing is waiting") {
		t.Fatalf("second approve: %v %s", err, out)
	}
	checkExports(t, dev.Addr)
	checkMetrics(t, metrics)
}

// checkExports is the tour's last step: `agentruntime export evidence`
// writes a pack that validates (the spec's evidence pack sections, the
// hash the runtime announced), and the events and snapshot behind it are
// valid against the spec's schemas, core and Lime profile.
func checkExports(t *testing.T, addr string) {
	t.Helper()
	dir := t.TempDir()
	packFile := filepath.Join(dir, "pack.json")
	out := cli(t, "export", "evidence", "--addr", addr, "-o", packFile, "--note", "tour")
	m := regexp.MustCompile(`evidence (\S+): sha256 ([0-9a-f]{64}), covers sequence (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("export evidence said %q", out)
	}
	raw, err := os.ReadFile(packFile)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != m[2] {
		t.Fatalf("pack file hash %x, the export said %s", sum, m[2])
	}
	var pack map[string]any
	if err := json.Unmarshal(raw, &pack); err != nil {
		t.Fatalf("pack is not JSON: %v", err)
	}
	// The spec's evidence pack (contracts/evidence-replay.md).
	for _, k := range []string{"runtimeSummary", "timeline", "threadReadModel", "toolCalls", "failedCalls", "artifacts", "context",
		"routing", "permission", "sandbox", "hooks", "processes", "limits", "verificationOutcomes", "reviewNotes"} {
		if _, ok := pack[k]; !ok {
			t.Errorf("pack has no %s", k)
		}
	}
	if len(pack["timeline"].([]any)) < 10 || len(pack["toolCalls"].([]any)) < 2 || fmt.Sprint(pack["reviewNotes"]) != "[tour]" {
		t.Fatalf("pack content: %d timeline entries, tool calls %v, notes %v", len(pack["timeline"].([]any)), pack["toolCalls"], pack["reviewNotes"])
	}
	// The same scope at the same sequence: the same bytes, to stdout.
	if again := cliStdout(t, "export", "evidence", "--addr", addr, "--note", "tour", "--at-sequence", m[3]); again != string(raw) {
		t.Fatalf("export to stdout differs from the file")
	}

	v, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"core", "lime"} {
		file := filepath.Join(dir, "events-"+format+".jsonl")
		out := cli(t, "export", "events", "--addr", addr, "--format", format, "-o", file)
		if !strings.Contains(out, " 0 skipped") {
			t.Errorf("export events --format %s: %s", format, out)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) < 20 {
			t.Fatalf("%s: only %d events", format, len(lines))
		}
		for _, l := range lines {
			if err := v.Event([]byte(l), format == "lime"); err != nil {
				t.Errorf("%s event invalid: %v\n%s", format, err, l)
			}
		}
		snap := filepath.Join(dir, "snapshot-"+format+".json")
		cli(t, "export", "snapshot", "--addr", addr, "--format", format, "-o", snap)
		if b, err = os.ReadFile(snap); err != nil {
			t.Fatal(err)
		}
		if err := v.Snapshot(b, format == "lime"); err != nil {
			t.Errorf("%s snapshot invalid: %v", format, err)
		}
	}
	for _, what := range []string{"replay", "review"} {
		var doc map[string]any
		if err := json.Unmarshal([]byte(cliStdout(t, "export", what, "--addr", addr)), &doc); err != nil || doc["kind"] == nil {
			t.Fatalf("export %s: %v %v", what, doc, err)
		}
	}
	// A caller's mistakes are named.
	if out, err := exec.Command(binary, "export", "evidence", "--addr", addr, "--thread", "main", "--turn", "x").CombinedOutput(); err == nil || !strings.Contains(string(out), "at most one") {
		t.Fatalf("two scopes: %v %s", err, out)
	}
	if out, err := exec.Command(binary, "export", "evidence", "--addr", addr, "--session", "nope").CombinedOutput(); err == nil || !strings.Contains(string(out), "not found") {
		t.Fatalf("missing session: %v %s", err, out)
	}
}

// cliStdout runs the binary and answers its stdout only.
func cliStdout(t *testing.T, args ...string) string {
	t.Helper()
	var stderr strings.Builder
	cmd := exec.Command(binary, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agentruntime %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

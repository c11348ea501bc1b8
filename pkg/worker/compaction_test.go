package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

// The summary request is matched by the compaction prompt's words; the
// turn itself reads a 1,200-byte file (about 300 tokens) three times, then
// answers.
const compactionScript = `
model: scripted
turns:
  - match: "compact the conversation"
    steps:
      - text: "Read notes.txt; it is a long list of notes."
        usage: {input_tokens: 90, output_tokens: 8}
  - steps:
      - text: "Reading the README."
        tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
      - text: "Reading it again to be sure."
        tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
      - text: "Once more."
        tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
      - text: "The notes are a list."
`

// With a small context window the transcript outgrows the budget: the
// worker compacts it through the model (started, the summary's model
// call, completed with the stored summary and the token counts) and the
// turn continues to its answer on the compacted transcript.
func TestCompactionWhenTheTranscriptExceedsTheBudget(t *testing.T) {
	rt := startRuntime(t)
	root := workspace(t)
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte(strings.Repeat("a note line\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	rt.startWorker(t, scripted(t, compactionScript), root, func(c *worker.Config) {
		c.SystemPrompt = "You read files."
		c.ContextWindow = 500 // tokens; the budget is 400: two reads exceed it
	})
	tl := rt.follow(t, "s1")
	ctx := context.Background()
	if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("what do the notes say?")}); err != nil {
		t.Fatal(err)
	}
	started := tl.until("context.compaction.started")
	done := tl.until("context.compaction.completed")
	end := tl.until("turn.completed")
	if end.GetTurnCompleted().GetSummary() != "The notes are a list." {
		t.Fatalf("turn.completed = %v", end)
	}
	s, c := started.GetContextCompactionStarted(), done.GetContextCompactionCompleted()
	if s.GetTrigger() != "auto_token_limit" || len(s.GetAffectedTurnIds()) != 1 || s.GetAffectedTurnIds()[0] != end.GetTurnId() || s.GetTokensBefore() <= 400 {
		t.Fatalf("context.compaction.started = %v", started)
	}
	if c.GetTokensBefore() != s.GetTokensBefore() || c.GetTokensAfter() >= c.GetTokensBefore() || c.GetSummaryRef() == "" || done.GetStepId() != started.GetStepId() {
		t.Fatalf("context.compaction.completed = %v", done)
	}
	// The summary is stored and readable by the tenant.
	out, err := rt.control.ReadOutput(ctx, &controlv1.ReadOutputRequest{Uri: c.GetSummaryRef()})
	if err != nil || string(out.GetData()) != "Read notes.txt; it is a long list of notes." {
		t.Fatalf("summary = %q, %v", out.GetData(), err)
	}
	// The summary's model call is the compaction's own step; the turn
	// then goes on with every scripted step (the compacted transcript
	// stands for the steps it replaced).
	var inStep []string
	reads := 0
	for _, ev := range tl.seen {
		if ev.GetStepId() == started.GetStepId() {
			inStep = append(inStep, ev.GetType())
		}
		if ev.GetType() == "tool.result" {
			reads++
		}
	}
	inOrder(t, inStep, "context.compaction.started", "model.requested", "model.completed", "context.compaction.completed")
	if strings.Contains(strings.Join(inStep, " "), "model.delta") {
		t.Fatalf("the summary was streamed as model output: %v", inStep)
	}
	if reads != 3 {
		t.Fatalf("%d reads, want 3 (the script replayed or skipped a step)", reads)
	}
	inOrder(t, testkit.Types(tl.seen), "tool.result", "tool.result", "context.compaction.started", "context.compaction.completed", "model.requested", "turn.completed")
}

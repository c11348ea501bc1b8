package worker_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
)

// Two reads in one step, then an answer: a turn with many facts.
const twoReadsScript = `
model: scripted
turns:
  - steps:
      - reasoning: "Both files matter."
        text: "Reading the README and the notes."
        tool_calls: [{name: read_file, arguments: {path: README.md}}, {name: read_file, arguments: {path: NOTES.md}}]
        usage: {input_tokens: 120, output_tokens: 14}
      - text: "The README says hello; the notes agree."
        usage: {input_tokens: 180, output_tokens: 9}
`

// The facts of a step travel together: a turn of two steps, whose first
// streams reasoning and text and asks for two reads, reports its 20-odd
// facts in at most 5 ReportEvents calls (counted by control's gRPC
// server), the linger being long enough that only the points where the
// worker must have said everything send (the route, the calls'
// evaluations, the turn's end). Every fact is in the log once, in the
// order the worker said them. Each call's evaluation records the
// sandbox it runs under: one permission round trip per call.
func TestAStepsFactsTravelInOneReport(t *testing.T) {
	rt := startRuntime(t)
	root := workspace(t)
	if err := os.WriteFile(filepath.Join(root, "NOTES.md"), []byte("hello again\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt.startWorker(t, scripted(t, twoReadsScript), root, func(c *worker.Config) { c.ReportLinger = time.Hour })
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("what do the files say?")}); err != nil {
		t.Fatal(err)
	}
	tl.until("turn.completed")
	got := testkit.Types(tl.seen)
	inOrder(t, got, "turn.started", "context.resolved", "tool.catalog.resolved", "model.requested", "reasoning.delta", "model.delta", "model.completed",
		"tool.started", "tool.args", "permission.evaluated", "sandbox.applied", "tool.result",
		"model.requested", "model.delta", "model.completed", "turn.completed")
	facts := 0
	seen := map[string]bool{}
	for _, ev := range tl.seen {
		if seen[ev.GetEventId()] {
			t.Fatalf("event %s (%s) appended twice", ev.GetEventId(), ev.GetType())
		}
		seen[ev.GetEventId()] = true
		switch {
		case strings.HasPrefix(ev.GetType(), "model."), strings.HasPrefix(ev.GetType(), "reasoning."), strings.HasPrefix(ev.GetType(), "context."),
			ev.GetType() == "tool.started", ev.GetType() == "tool.args", ev.GetType() == "tool.result", ev.GetType() == "tool.catalog.resolved",
			ev.GetType() == "run.status", ev.GetType() == "turn.completed":
			facts++
		}
	}
	if n := rt.reports("s1"); n > 5 || facts < 16 {
		t.Fatalf("%d facts of the worker took %d ReportEvents calls, want at most 5 (timeline %v)", facts, n, got)
	}
	// Each call's permission and what it ran under: one round trip, the
	// worker's sandbox.applied recorded by the evaluation, with it.
	if n, m := rt.calls(permissionv1.PermissionService_EvaluatePermission_FullMethodName, "s1"),
		rt.calls(permissionv1.PermissionService_ReportSandboxApplied_FullMethodName, "s1"); n != 2 || m != 0 {
		t.Fatalf("two calls took %d EvaluatePermission and %d ReportSandboxApplied calls, want 2 and 0", n, m)
	}
	evaluated, applied := map[string]string{}, map[string]bool{}
	for _, ev := range tl.seen {
		switch {
		case ev.GetType() == "permission.evaluated":
			evaluated[ev.GetToolCallId()] = ev.GetPermissionEvaluated().GetEvaluationId()
		case ev.GetType() == "sandbox.applied" && ev.GetSandboxApplied().GetAppliedBy() != "permission":
			if ev.GetStepId() == "" || ev.GetSandboxApplied().GetEvaluationId() != evaluated[ev.GetToolCallId()] || ev.GetSandboxApplied().GetProfile().GetCwd() == "" {
				t.Fatalf("the worker's sandbox.applied %v does not join its call's evaluation %v", ev, evaluated)
			}
			applied[ev.GetToolCallId()] = true
		}
	}
	if len(evaluated) != 2 || len(applied) != 2 {
		t.Fatalf("evaluated calls %v, calls with the worker's sandbox.applied %v: want both for both calls", evaluated, applied)
	}
}

// A streamed reply's deltas reach a subscriber while the reply is still
// streaming: the model's server sends its first words, then waits until
// the subscriber has them before it sends the rest. DeltaInterval and
// ReportLinger bound the wait; no further token is needed to send them.
func TestStreamedDeltasReachASubscriberWhileTheReplyStreams(t *testing.T) {
	rt := startRuntime(t)
	seen := make(chan struct{})
	first, rest, _ := strings.Cut(sseAnswer, "\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, first+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-seen:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, rest)
	}))
	defer srv.Close()
	rt.startWorker(t, &provider.OpenAI{BaseURL: srv.URL + "/v1", ID: "openai"}, workspace(t))
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("what is in the workspace?")}); err != nil {
		t.Fatal(err)
	}
	if d := tl.until("model.delta"); d.GetModelDelta().GetText() != "The workspace " {
		t.Fatalf("first delta %q, want the first words alone", d.GetModelDelta().GetText())
	}
	close(seen)
	if s := tl.until("turn.completed").GetTurnCompleted().GetSummary(); s != "The workspace has a README." {
		t.Fatalf("summary %q", s)
	}
}

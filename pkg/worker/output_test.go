package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
)

// recording remembers what the model was sent.
type recording struct {
	provider.Provider
	mu   sync.Mutex
	reqs []provider.Request
}

func (r *recording) Stream(ctx context.Context, req provider.Request, sink provider.Sink) (provider.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Provider.Stream(ctx, req, sink)
}

func (r *recording) toolMessages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.reqs[len(r.reqs)-1].Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

const bigOutputScript = `
model: scripted
turns:
  - steps:
      - tool_calls: [{name: read_file, arguments: {path: README.md}}]
      - tool_calls: [{name: read_file, arguments: {path: big.log}}]
      - text: "Read both."
`

// A tool with large output: above the inline budget the output goes to
// the object store (output.spilled, the ref on tool.result, a preview in
// the event), above the capture cap it is cut (output.truncated), and
// secrets become [REDACTED:<rule>] everywhere (output.redacted). A small
// output stays inline with no output facts.
func TestLargeToolOutputIsSpilledTruncatedAndRedacted(t *testing.T) {
	rt := startRuntime(t)
	root := workspace(t)
	var b strings.Builder
	b.WriteString("key AKIAABCDEFGHIJKLMNOP here\n")
	for i := 0; b.Len() < 300_000; i++ {
		b.WriteString("line of a large log, entry number ")
		b.WriteString(strings.Repeat("x", i%40))
		b.WriteString("\n")
	}
	big := b.String()
	if err := os.WriteFile(filepath.Join(root, "big.log"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recording{Provider: scripted(t, bigOutputScript)}
	rt.startWorker(t, rec, root, func(c *worker.Config) { c.Sandbox.MaxOutput = 200_000 })
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("read the logs")}); err != nil {
		t.Fatal(err)
	}
	tl.until("turn.completed")
	var results []*eventsv1.RuntimeEvent
	facts := map[string]*eventsv1.RuntimeEvent{}
	for _, ev := range tl.seen {
		switch {
		case ev.GetType() == "tool.result":
			results = append(results, ev)
		case strings.HasPrefix(ev.GetType(), "output."):
			if facts[ev.GetType()] != nil {
				t.Fatalf("two %s facts", ev.GetType())
			}
			facts[ev.GetType()] = ev
		}
	}
	if len(results) != 2 {
		t.Fatalf("tool results: %v", testkit.Types(tl.seen))
	}
	small, large := results[0], results[1]
	if small.GetToolResult().GetOutput() != nil || small.GetToolResult().GetPreview() != "hello from the README\n" {
		t.Fatalf("the small result = %v", small.GetToolResult())
	}
	ref := large.GetToolResult().GetOutput()
	if ref.GetUri() == "" || !ref.GetTruncated() || !ref.GetRedacted() || ref.GetOwner() != "tool:"+large.GetToolCallId() {
		t.Fatalf("the large result's ref = %v", ref)
	}
	if p := large.GetToolResult().GetPreview(); len(p) > 2000+len("…") || !strings.HasPrefix(p, "key [REDACTED:aws_access_key_id] here\n") {
		t.Fatalf("preview (%d bytes) = %.80q", len(p), p)
	}
	for _, typ := range []string{"output.spilled", "output.truncated", "output.redacted"} {
		f := facts[typ]
		if f == nil || f.GetToolCallId() != large.GetToolCallId() || f.GetRunId() == "" {
			t.Fatalf("%s = %v (timeline %v)", typ, f, testkit.Types(tl.seen))
		}
	}
	if facts["output.spilled"].GetOutputSpilled().GetOutput().GetUri() != ref.GetUri() ||
		!strings.Contains(facts["output.truncated"].GetOutputTruncated().GetReason(), "produced 300") ||
		!strings.Contains(facts["output.truncated"].GetOutputTruncated().GetReason(), "200000 were kept") ||
		facts["output.redacted"].GetOutputRedacted().GetReason() != "matched redaction rules: aws_access_key_id×1" {
		t.Fatalf("output facts: %v", facts)
	}
	inOrder(t, testkit.Types(tl.seen), "output.spilled", "output.redacted", "output.truncated", "tool.result")

	// The stored output is the redacted capture, readable by the tenant.
	var stored []byte
	for off := int64(0); ; {
		r, err := rt.control.ReadOutput(context.Background(), &controlv1.ReadOutputRequest{Uri: ref.GetUri(), Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, r.GetData()...)
		if off = r.GetNextOffset(); off >= r.GetSizeBytes() {
			break
		}
	}
	if strings.Contains(string(stored), "AKIA") || !strings.HasPrefix(string(stored), "key [REDACTED:aws_access_key_id] here\n") ||
		int64(len(stored)) != ref.GetSizeBytes() || !strings.HasSuffix(big[:200_000], string(stored[len(stored)-1000:])) {
		t.Fatalf("stored %d bytes: %.80q", len(stored), stored)
	}

	// The model got the head and the tail with the ref in between, and
	// was told about the cut.
	msgs := rec.toolMessages()
	content := msgs[len(msgs)-1]
	if len(content) > worker.DefaultOutputBudget+500 || !strings.HasPrefix(content, "key [REDACTED:aws_access_key_id] here\n") ||
		!strings.Contains(content, "is stored as "+ref.GetUri()) || !strings.Contains(content, big[200_000-100:200_000]) ||
		!strings.Contains(content, "\n[output truncated: the tool produced 300") || strings.Contains(content, "AKIA") {
		t.Fatalf("the model got %d bytes: %.200q … %.200q", len(content), content, content[max(0, len(content)-200):])
	}
}

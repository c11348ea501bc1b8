package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/binproc"
)

// `agentruntime dev --models` with a provider of kind anthropic: the
// in-process worker serves its model with the Messages API (a double
// speaking its wire format, the key from the variable the registry
// names), and the facts name the provider.
func TestDevServesARegistryModelWithItsProvidersKind(t *testing.T) {
	var gotKey atomic.Value
	gotKey.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		gotKey.Store(r.Header.Get("x-api-key"))
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-t","content":[],"stop_reason":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi from the Messages API."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}

event: message_stop
data: {"type":"message_stop"}

`)
	}))
	defer srv.Close()
	models := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(models, []byte(`providers:
  - {id: anthropic, kind: anthropic, base_url: "`+srv.URL+`", api_key_env: AR_TEST_ANTHROPIC_KEY, credential_status: present}
models:
  - {id: claude-t, provider: anthropic, capabilities: [tools], context_window: 200000, prices_usd_per_million: {input: 3, output: 15}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := binproc.Start(t, binary, []string{"AR_TEST_ANTHROPIC_KEY=sk-ant-e2e"}, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workspace", t.TempDir(), "--models", models)
	if !strings.Contains(dev.Output(), "claude-t (anthropic, anthropic)") {
		t.Fatalf("the banner does not say which API serves claude-t:\n%s", dev.Output())
	}
	control := controlv1.NewControlServiceClient(dial(t, dev.Addr))
	ctx, cancel := context.WithTimeout(testkit.Context(t), 60*time.Second)
	defer cancel()
	stream, err := control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: "p", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1,
		TypePrefixes: []string{"turn.", "model.completed"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "p", ThreadId: "main",
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}, Options: map[string]string{"model": "claude-t"}}); err != nil {
		t.Fatal(err)
	}
	var completed *eventsv1.ModelCompleted
	for {
		m, err := stream.Recv()
		if err != nil {
			t.Fatalf("%v\n%s", err, dev.Output())
		}
		ev := m.GetEvent()
		if c := ev.GetModelCompleted(); c != nil {
			completed = c
		}
		if ev.GetType() == "turn.failed" {
			t.Fatalf("turn.failed %v\n%s", ev.GetTurnFailed(), dev.Output())
		}
		if ev.GetType() == "turn.completed" {
			if ev.GetTurnCompleted().GetSummary() != "Hi from the Messages API." {
				t.Fatalf("summary %q", ev.GetTurnCompleted().GetSummary())
			}
			break
		}
	}
	if completed.GetProvider() != "anthropic" || completed.GetModel() != "claude-t" || completed.GetUsage().GetOutputTokens() != 7 || gotKey.Load() != "sk-ant-e2e" {
		t.Fatalf("model.completed %v, key %q", completed, gotKey.Load())
	}
}

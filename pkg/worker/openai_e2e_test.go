package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
)

// Real-format chat-completions streams, as recorded from an
// OpenAI-compatible server: a tool call whose arguments are split across
// chunks with usage in a last chunk, then a text answer.
const (
	sseToolCall = `data: {"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_ls1","type":"function","function":{"name":"list_dir","arguments":""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\".\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-b","choices":[],"usage":{"prompt_tokens":300,"completion_tokens":20,"total_tokens":320}}

data: [DONE]

`
	sseAnswer = `data: {"id":"chatcmpl-10","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":{"role":"assistant","content":"The workspace "},"finish_reason":null}]}

data: {"id":"chatcmpl-10","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":{"content":"has a README."},"finish_reason":null}]}

data: {"id":"chatcmpl-10","object":"chat.completion.chunk","model":"gpt-b","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: {"id":"chatcmpl-10","object":"chat.completion.chunk","model":"gpt-b","choices":[],"usage":{"prompt_tokens":350,"completion_tokens":8,"total_tokens":358}}

data: [DONE]

`
)

func price(n int64) *int64 { return &n }

// The OpenAI-compatible adapter end to end: routing picks gpt-a, which
// answers 429; the worker records model.failed, routing falls back to
// gpt-b, whose tool call runs and whose answer ends the turn; usage is
// recorded as cost.
func TestOpenAICompatibleTurnWithFallbackAndCost(t *testing.T) {
	rt := startRuntime(t)
	var mu sync.Mutex
	var models []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(raw, &req)
		mu.Lock()
		models = append(models, req.Model)
		mu.Unlock()
		if req.Model == "gpt-a" {
			w.Header().Set("Retry-After", "20")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for gpt-a","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		body := sseToolCall
		if req.Messages[len(req.Messages)-1].Role == "tool" {
			body = sseAnswer
		}
		for _, part := range strings.SplitAfter(body, "\n\n") {
			_, _ = io.WriteString(w, part)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()

	ctx := context.Background()
	_, err := routingv1.NewRoutingServiceClient(rt.conn).UpdateModelRegistry(ctx, &routingv1.UpdateModelRegistryRequest{Changes: []*routingv1.ModelRegistryChange{
		{Change: &routingv1.ModelRegistryChange_UpsertProvider{UpsertProvider: &eventsv1.Provider{Id: "openai", CredentialStatus: eventsv1.CredentialStatus_CREDENTIAL_STATUS_PRESENT}}},
		{Change: &routingv1.ModelRegistryChange_UpsertModel{UpsertModel: &eventsv1.Model{Id: "gpt-a", ProviderId: "openai", Capabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS},
			ContextWindow: 128000, Prices: &eventsv1.ModelPrices{InputNanosPerMillion: price(2_000_000_000), OutputNanosPerMillion: price(8_000_000_000)}}}},
		{Change: &routingv1.ModelRegistryChange_UpsertModel{UpsertModel: &eventsv1.Model{Id: "gpt-b", ProviderId: "openai", Capabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS},
			ContextWindow: 128000, Prices: &eventsv1.ModelPrices{InputNanosPerMillion: price(1_000_000_000), OutputNanosPerMillion: price(4_000_000_000)}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	rt.startWorker(t, &provider.OpenAI{BaseURL: srv.URL + "/v1", ID: "openai"}, workspace(t))
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("what is in the workspace?"),
		Options: map[string]string{"model": "gpt-a"}}); err != nil {
		t.Fatal(err)
	}
	done := tl.until("turn.completed")
	if done.GetTurnCompleted().GetSummary() != "The workspace has a README." {
		t.Fatalf("summary %q", done.GetTurnCompleted().GetSummary())
	}
	got := testkit.Types(tl.seen)
	inOrder(t, got, "routing.decided", "model.requested", "model.failed", "routing.fallback.applied", "model.requested", "model.completed",
		"cost.recorded", "tool.started", "tool.args", "tool.result", "model.requested", "model.delta", "model.completed", "cost.recorded", "turn.completed")
	for _, ev := range tl.seen {
		switch ev.GetType() {
		case "model.failed":
			if f := ev.GetModelFailed(); f.GetCategory() != provider.RateLimited || f.GetModel() != "gpt-a" || !f.GetRetryable() {
				t.Fatalf("model.failed = %v", f)
			}
		case "model.completed":
			if u := ev.GetModelCompleted().GetUsage(); u.GetInputTokens() == 0 || ev.GetModelCompleted().GetModel() != "gpt-b" {
				t.Fatalf("model.completed = %v", ev.GetModelCompleted())
			}
		case "tool.args":
			if ev.GetToolArgs().GetSafeArgsJson() != `{"path":"."}` || ev.GetToolCallId() != "call_ls1" {
				t.Fatalf("tool.args = %v (call %s)", ev.GetToolArgs(), ev.GetToolCallId())
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(models, ",") != "gpt-a,gpt-b,gpt-b" {
		t.Fatalf("calls went to %v", models)
	}
}

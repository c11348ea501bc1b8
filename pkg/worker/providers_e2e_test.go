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

// Responses API streams, in its wire format: a function call, then a text
// answer with cached input tokens.
const (
	responsesToolCall = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_ls1","name":"list_dir"}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":2,"item_id":"fc_1","output_index":0,"delta":"{\"path\":"}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_1","output_index":0,"delta":"\".\"}"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":4,"output_index":0,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"path\":\".\"}","call_id":"call_ls1","name":"list_dir"}}

event: response.completed
data: {"type":"response.completed","sequence_number":5,"response":{"id":"resp_1","status":"completed","usage":{"input_tokens":300,"input_tokens_details":{"cached_tokens":0},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":320}}}

`
	responsesAnswer = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_2","status":"in_progress","output":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_2","output_index":0,"content_index":0,"delta":"The workspace "}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_2","output_index":0,"content_index":0,"delta":"has a README."}

event: response.completed
data: {"type":"response.completed","sequence_number":3,"response":{"id":"resp_2","status":"completed","usage":{"input_tokens":400,"input_tokens_details":{"cached_tokens":300},"output_tokens":8,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":408}}}

`
)

// The registry names each model's provider kind: claude-a is served by
// the Anthropic Messages API, which answers 529 overloaded; routing falls
// back to gpt-r, served by the OpenAI Responses API, whose function call
// runs and whose answer ends the turn. Facts name each call's provider,
// and the cached input tokens the API reported are priced as such.
func TestRegistryKindsPickTheAPIAndFallbackCrossesProviders(t *testing.T) {
	rt := startRuntime(t)
	var mu sync.Mutex
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, r.URL.Path+" "+r.Header.Get("x-api-key")+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/anthropic/v1/messages" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(529)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		var req struct {
			Input []struct {
				Type string `json:"type"`
			} `json:"input"`
		}
		_ = json.Unmarshal(raw, &req)
		w.Header().Set("Content-Type", "text/event-stream")
		body := responsesToolCall
		if n := len(req.Input); n > 0 && req.Input[n-1].Type == "function_call_output" {
			body = responsesAnswer
		}
		for _, part := range strings.SplitAfter(body, "\n\n") {
			_, _ = io.WriteString(w, part)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()

	ctx := context.Background()
	reg := []*routingv1.ModelRegistryChange{
		{Change: &routingv1.ModelRegistryChange_UpsertProvider{UpsertProvider: &eventsv1.Provider{Id: "anthropic", Kind: provider.KindAnthropic,
			BaseUrl: srv.URL + "/anthropic", ApiKeyEnv: "TEST_ANTHROPIC_KEY", CredentialStatus: eventsv1.CredentialStatus_CREDENTIAL_STATUS_PRESENT}}},
		{Change: &routingv1.ModelRegistryChange_UpsertProvider{UpsertProvider: &eventsv1.Provider{Id: "openai", Kind: provider.KindOpenAIResponses,
			BaseUrl: srv.URL + "/openai/v1", ApiKeyEnv: "TEST_OPENAI_KEY", CredentialStatus: eventsv1.CredentialStatus_CREDENTIAL_STATUS_PRESENT}}},
		{Change: &routingv1.ModelRegistryChange_UpsertModel{UpsertModel: &eventsv1.Model{Id: "claude-a", ProviderId: "anthropic", Capabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS},
			ContextWindow: 200000, Prices: &eventsv1.ModelPrices{InputNanosPerMillion: price(3_000_000_000), OutputNanosPerMillion: price(15_000_000_000)}}}},
		{Change: &routingv1.ModelRegistryChange_UpsertModel{UpsertModel: &eventsv1.Model{Id: "gpt-r", ProviderId: "openai", Capabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS},
			ContextWindow: 400000, Prices: &eventsv1.ModelPrices{InputNanosPerMillion: price(1_000_000_000), OutputNanosPerMillion: price(8_000_000_000), CachedInputNanosPerMillion: price(100_000_000)}}}},
	}
	upd, err := routingv1.NewRoutingServiceClient(rt.conn).UpdateModelRegistry(ctx, &routingv1.UpdateModelRegistryRequest{Changes: reg})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TEST_ANTHROPIC_KEY": "sk-ant", "TEST_OPENAI_KEY": "sk-oai"}
	p, err := provider.FromRegistry(upd.GetRegistry(), func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Served(), "; "); got != "claude-a (anthropic, anthropic); gpt-r (openai, openai_responses)" {
		t.Fatalf("served %s", got)
	}
	rt.startWorker(t, p, workspace(t))
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("what is in the workspace?"),
		Options: map[string]string{"model": "claude-a"}}); err != nil {
		t.Fatal(err)
	}
	done := tl.until("turn.completed")
	if done.GetTurnCompleted().GetSummary() != "The workspace has a README." {
		t.Fatalf("summary %q", done.GetTurnCompleted().GetSummary())
	}
	inOrder(t, testkit.Types(tl.seen), "model.requested", "model.failed", "routing.fallback.applied", "model.requested", "model.completed",
		"tool.started", "tool.result", "model.requested", "model.completed", "cost.recorded", "turn.completed")
	var costs []*eventsv1.CostRecorded
	for _, ev := range tl.seen {
		switch ev.GetType() {
		case "model.failed":
			if f := ev.GetModelFailed(); f.GetProvider() != "anthropic" || f.GetModel() != "claude-a" || f.GetCategory() != provider.Overloaded || !f.GetRetryable() {
				t.Fatalf("model.failed = %v", f)
			}
		case "model.completed":
			if c := ev.GetModelCompleted(); c.GetProvider() != "openai" || c.GetModel() != "gpt-r" {
				t.Fatalf("model.completed = %v", c)
			}
		case "cost.recorded":
			costs = append(costs, ev.GetCostRecorded())
		}
	}
	if len(costs) != 2 {
		t.Fatalf("cost.recorded %v", costs)
	}
	// The answer's 400 input tokens were 300 cached: 100 at $1/M, 300 at
	// $0.10/M, 8 output at $8/M.
	if u := costs[1].GetUsage(); u.GetInputTokens() != 100 || u.GetCachedInputTokens() != 300 || u.GetOutputTokens() != 8 {
		t.Fatalf("the answer's usage %v", u)
	}
	if c := costs[1].GetCost(); c.GetTotalNanos() != 100*1000+300*100+8*8000 {
		t.Fatalf("the answer's cost %v", c)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(calls, ",") != "/anthropic/v1/messages sk-ant,/openai/v1/responses Bearer sk-oai,/openai/v1/responses Bearer sk-oai" {
		t.Fatalf("calls %v", calls)
	}
}

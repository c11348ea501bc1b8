package provider_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/worker/provider"
)

// recorder is a Sink that keeps what arrived, in order.
type recorder struct {
	text, reasoning []string
	calls           []string
	args            map[int][]string
}

func (r *recorder) Text(d string)      { r.text = append(r.text, d) }
func (r *recorder) Reasoning(d string) { r.reasoning = append(r.reasoning, d) }
func (r *recorder) ToolCall(i int, id, name string) {
	r.calls = append(r.calls, id+":"+name)
}
func (r *recorder) ToolArgs(i int, c string) {
	if r.args == nil {
		r.args = map[int][]string{}
	}
	r.args[i] = append(r.args[i], c)
}

// replay serves one recorded SSE body (in the exact framing OpenAI uses)
// and keeps the request it got.
func replay(t *testing.T, status int, header map[string]string, body string) (*provider.OpenAI, *[]byte) {
	t.Helper()
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			t.Errorf("request %s with auth %q", r.URL.Path, r.Header.Get("Authorization"))
		}
		got, _ = io.ReadAll(r.Body)
		for k, v := range header {
			w.Header().Set(k, v)
		}
		if status == 200 {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		w.WriteHeader(status)
		// Flush line by line, as a server streaming tokens does.
		for _, line := range strings.SplitAfter(body, "\n") {
			_, _ = io.WriteString(w, line)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return &provider.OpenAI{BaseURL: srv.URL + "/v1", APIKey: "sk-test"}, &got
}

// A recorded gpt-4o style stream: text, two tool calls whose arguments are
// split across chunks (the second call's chunks interleave after the
// first's), finish_reason tool_calls, then usage in a last chunk with no
// choices, then [DONE].
const toolStream = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Let me "},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"look."},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a1","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"README.md\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b2","type":"function","function":{"name":"list_dir","arguments":"{\"path\""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":": \".\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":812,"completion_tokens":57,"total_tokens":869,"prompt_tokens_details":{"cached_tokens":256},"completion_tokens_details":{"reasoning_tokens":0}}}

data: [DONE]

`

func TestOpenAIStreamWithSplitToolCallsAndUsageLast(t *testing.T) {
	p, sent := replay(t, 200, nil, toolStream)
	rec := &recorder{}
	resp, err := p.Stream(context.Background(), provider.Request{
		Model:    "gpt-4o",
		Messages: []provider.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "what is here?"}},
		Tools:    []provider.Tool{{Name: "read_file", Description: "reads", Schema: `{"type":"object"}`}},
	}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Let me look." || strings.Join(rec.text, "") != "Let me look." || len(rec.text) != 2 {
		t.Fatalf("text %q, deltas %q", resp.Text, rec.text)
	}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0] != (provider.ToolCall{ID: "call_a1", Name: "read_file", Arguments: `{"path": "README.md"}`}) ||
		resp.ToolCalls[1] != (provider.ToolCall{ID: "call_b2", Name: "list_dir", Arguments: `{"path": "."}`}) {
		t.Fatalf("tool calls %+v", resp.ToolCalls)
	}
	if strings.Join(rec.calls, ",") != "call_a1:read_file,call_b2:list_dir" || len(rec.args[0]) != 2 {
		t.Fatalf("sink calls %v args %v", rec.calls, rec.args)
	}
	if !resp.UsageKnown || resp.Usage != (provider.Usage{InputTokens: 812 - 256, OutputTokens: 57, CachedInputTokens: 256}) {
		t.Fatalf("usage %+v known=%v", resp.Usage, resp.UsageKnown)
	}
	if resp.StopReason != "tool_use" || resp.RequestID != "chatcmpl-1" {
		t.Fatalf("stop %q id %q", resp.StopReason, resp.RequestID)
	}
	// The request is the chat-completions shape with streaming usage.
	var req map[string]any
	if err := json.Unmarshal(*sent, &req); err != nil {
		t.Fatal(err)
	}
	if req["stream"] != true || req["stream_options"].(map[string]any)["include_usage"] != true || req["model"] != "gpt-4o" {
		t.Fatalf("request %s", *sent)
	}
	tools := req["tools"].([]any)
	if tools[0].(map[string]any)["function"].(map[string]any)["name"] != "read_file" {
		t.Fatalf("tools %v", tools)
	}
}

func TestOpenAIMidStreamError(t *testing.T) {
	body := `data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}

data: {"error":{"message":"The server had an error while processing your request.","type":"server_error"}}

`
	p, _ := replay(t, 200, nil, body)
	rec := &recorder{}
	_, err := p.Stream(context.Background(), provider.Request{Model: "m"}, rec)
	pe := provider.AsError(err)
	if pe.Category != provider.StreamError || !strings.Contains(pe.Message, "server had an error") || !pe.Retryable() {
		t.Fatalf("err = %v", err)
	}
	if strings.Join(rec.text, "") != "Hel" {
		t.Fatalf("deltas before the error %q", rec.text)
	}
}

func TestOpenAIStreamCutShort(t *testing.T) {
	body := `data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}

`
	p, _ := replay(t, 200, nil, body)
	_, err := p.Stream(context.Background(), provider.Request{Model: "m"}, &recorder{})
	if pe := provider.AsError(err); pe.Category != provider.StreamError {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAIHTTPErrors(t *testing.T) {
	for _, tc := range []struct {
		status   int
		header   map[string]string
		body     string
		category string
		retry    time.Duration
	}{
		{429, map[string]string{"Retry-After": "7"}, `{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}`, provider.RateLimited, 7 * time.Second},
		{500, nil, `{"error":{"message":"internal"}}`, provider.ServerError, 0},
		{503, nil, `overloaded`, provider.Overloaded, 0},
		{401, nil, `{"error":{"message":"Incorrect API key provided"}}`, provider.Authentication, 0},
		{400, nil, `{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}`, provider.ContextLength, 0},
	} {
		p, _ := replay(t, tc.status, tc.header, tc.body)
		_, err := p.Stream(context.Background(), provider.Request{Model: "m"}, &recorder{})
		pe := provider.AsError(err)
		if pe.Category != tc.category || pe.Status != tc.status || pe.RetryAfter != tc.retry {
			t.Errorf("HTTP %d: %+v", tc.status, pe)
		}
	}
}

func TestScriptedIsDeterministicPerStep(t *testing.T) {
	s, err := provider.ParseScript([]byte(`
model: demo
turns:
  - match: notes
    steps:
      - text: "Reading it."
        tool_calls: [{name: read_file, arguments: {path: README.md}}]
        usage: {input_tokens: 10, output_tokens: 3}
      - text: "Done."
  - steps:
      - text: "Hello there."
`))
	if err != nil {
		t.Fatal(err)
	}
	p := provider.NewScripted(s)
	rec := &recorder{}
	r1, err := p.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: "user", Content: "write NOTES please"}}}, rec)
	if err != nil || r1.Text != "Reading it." || len(r1.ToolCalls) != 1 || r1.ToolCalls[0].Arguments != `{"path":"README.md"}` || r1.StopReason != "tool_use" || !r1.UsageKnown {
		t.Fatalf("step 1 = %+v, %v", r1, err)
	}
	if strings.Join(rec.args[0], "") != `{"path":"README.md"}` {
		t.Fatalf("args chunks %v", rec.args)
	}
	msgs := []provider.Message{{Role: "user", Content: "write NOTES please"}, {Role: "assistant", ToolCalls: r1.ToolCalls}, {Role: "tool", ToolCallID: r1.ToolCalls[0].ID, Content: "x"}}
	r2, err := p.Stream(context.Background(), provider.Request{Messages: msgs}, &recorder{})
	if err != nil || r2.Text != "Done." || r2.StopReason != "end_turn" || r2.UsageKnown {
		t.Fatalf("step 2 = %+v, %v", r2, err)
	}
	_, err = p.Stream(context.Background(), provider.Request{Messages: append(msgs, provider.Message{Role: "assistant", Content: "Done."})}, &recorder{})
	if pe := provider.AsError(err); pe.Category != provider.ScriptEnded {
		t.Fatalf("past the end: %v", err)
	}
	r3, err := p.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: "user", Content: "hi"}}}, &recorder{})
	if err != nil || r3.Text != "Hello there." {
		t.Fatalf("fallback turn = %+v, %v", r3, err)
	}
	if _, err := provider.ParseScript([]byte("turns: [{steps: [{txt: x}]}]")); err == nil {
		t.Fatal("unknown key accepted")
	}
}

// A turn that names a tool plays only when the call offers it: a client
// tool a front end sent, or the next turn that matches.
func TestScriptedTurnWithAToolPlaysWhenItIsOffered(t *testing.T) {
	s, err := provider.ParseScript([]byte(`
turns:
  - match: time
    tool: browser_time
    steps:
      - tool_calls: [{name: browser_time}]
  - steps:
      - text: "No clock here."
`))
	if err != nil {
		t.Fatal(err)
	}
	p := provider.NewScripted(s)
	ask := []provider.Message{{Role: "user", Content: "what time is it?"}}
	with, err := p.Stream(context.Background(), provider.Request{Messages: ask, Tools: []provider.Tool{{Name: "read_file"}, {Name: "browser_time"}}}, &recorder{})
	if err != nil || len(with.ToolCalls) != 1 || with.ToolCalls[0].Name != "browser_time" {
		t.Fatalf("with the tool offered: %+v, %v", with, err)
	}
	without, err := p.Stream(context.Background(), provider.Request{Messages: ask, Tools: []provider.Tool{{Name: "read_file"}}}, &recorder{})
	if err != nil || without.Text != "No clock here." || len(without.ToolCalls) != 0 {
		t.Fatalf("without it: %+v, %v", without, err)
	}
}

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

// The provider contract every adapter passes, each against a double that
// speaks its API's wire format (the request and streaming shapes of the
// published API references, contract_fixtures_test.go): text and
// reasoning stream as deltas, tool calls arrive whole with their
// arguments split across chunks, usage is reported in routing's disjoint
// parts, the transcript (system prompt, tool calls, their results) is sent
// in the API's own shape, and failures get the categories routing's
// fallback acts on.

// wire is one API: how to build its adapter on a base URL, the path it
// posts to, its recorded streams and error bodies, and how to read a
// request it sent back into the common transcript shape.
type wire struct {
	name    string
	path    string
	adapter func(base string) provider.Provider
	// base is the double's URL as the adapter's BaseURL wants it.
	base func(url string) string
	// auth checks a request's credentials.
	auth string
	// Recorded streams.
	text, tools, midError, cut string
	// wantTextUsage and wantToolsUsage are the streams' usage.
	wantTextUsage, wantToolsUsage provider.Usage
	// midErrorCategory is what a failure inside the stream maps to.
	midErrorCategory string
	// errors are refusals: status, header, body, category.
	errors []refusal
	// decode reads a request body into the common shape.
	decode func(t *testing.T, body []byte) transcript
}

type refusal struct {
	status   int
	header   map[string]string
	body     string
	category string
	retry    time.Duration
}

// transcript is a request in a shape every API maps to.
type transcript struct {
	Model, System string
	Stream        bool
	Users         []string
	// Calls and Results: "id name args" and "id content".
	Calls, Results []string
	Tools          []string
}

// serve answers every request with status, header and body (flushed line
// by line, as a streaming server does) and keeps the last request body.
func serve(t *testing.T, w wire, status int, header map[string]string, body string) (provider.Provider, *[]byte) {
	t.Helper()
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != w.path {
			t.Errorf("%s: request to %s, want %s", w.name, r.URL.Path, w.path)
		}
		if a := r.Header.Get("Authorization") + r.Header.Get("x-api-key"); a != w.auth {
			t.Errorf("%s: credentials %q, want %q", w.name, a, w.auth)
		}
		got, _ = io.ReadAll(r.Body)
		for k, v := range header {
			rw.Header().Set(k, v)
		}
		if status == 200 {
			rw.Header().Set("Content-Type", "text/event-stream")
		}
		rw.WriteHeader(status)
		for _, line := range strings.SplitAfter(body, "\n") {
			_, _ = io.WriteString(rw, line)
			rw.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return w.adapter(w.base(srv.URL)), &got
}

var conversation = provider.Request{
	Model: "m-1",
	Messages: []provider.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "What is here?"},
		{Role: "assistant", Content: "Let me look.", ToolCalls: []provider.ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: `{"path":"README.md"}`},
			{ID: "call_2", Name: "list_dir", Arguments: `{"path":"."}`}}},
		{Role: "tool", ToolCallID: "call_1", Content: "# A project"},
		{Role: "tool", ToolCallID: "call_2", Content: "README.md"},
	},
	Tools: []provider.Tool{{Name: "read_file", Description: "reads a file", Schema: `{"type":"object","properties":{"path":{"type":"string"}}}`},
		{Name: "list_dir", Description: "lists a directory", Schema: `{"type":"object"}`}},
}

func TestProviderContract(t *testing.T) {
	for _, w := range wires() {
		t.Run(w.name, func(t *testing.T) {
			t.Run("text, reasoning and usage stream", func(t *testing.T) {
				p, sent := serve(t, w, 200, nil, w.text)
				rec := &recorder{}
				resp, err := p.Stream(context.Background(), conversation, rec)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text != "Hello there." || strings.Join(rec.text, "") != "Hello there." || len(rec.text) < 2 {
					t.Fatalf("text %q, deltas %q", resp.Text, rec.text)
				}
				if strings.Join(rec.reasoning, "") != "The user greets." {
					t.Fatalf("reasoning deltas %q", rec.reasoning)
				}
				if !resp.UsageKnown || resp.Usage != w.wantTextUsage {
					t.Fatalf("usage %+v (known %v), want %+v", resp.Usage, resp.UsageKnown, w.wantTextUsage)
				}
				if resp.StopReason != "end_turn" || resp.RequestID == "" || len(resp.ToolCalls) != 0 {
					t.Fatalf("stop %q, request id %q, calls %v", resp.StopReason, resp.RequestID, resp.ToolCalls)
				}
				// The transcript went in the API's shape.
				got := w.decode(t, *sent)
				want := transcript{Model: "m-1", System: "Be brief.", Stream: true, Users: []string{"What is here?"},
					Calls:   []string{`call_1 read_file {"path":"README.md"}`, `call_2 list_dir {"path":"."}`},
					Results: []string{"call_1 # A project", "call_2 README.md"}, Tools: []string{"read_file", "list_dir"}}
				if a, b := js(got), js(want); a != b {
					t.Fatalf("the request read back\n got %s\nwant %s\nbody %s", a, b, *sent)
				}
			})
			t.Run("tool calls with split arguments", func(t *testing.T) {
				p, _ := serve(t, w, 200, nil, w.tools)
				rec := &recorder{}
				resp, err := p.Stream(context.Background(), conversation, rec)
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].Name != "read_file" || resp.ToolCalls[0].Arguments != `{"path": "README.md"}` ||
					resp.ToolCalls[1].Name != "list_dir" || resp.ToolCalls[1].Arguments != `{"path": "."}` || resp.ToolCalls[0].ID == "" || resp.ToolCalls[1].ID == "" {
					t.Fatalf("calls %+v", resp.ToolCalls)
				}
				if len(rec.calls) != 2 || rec.calls[0] != resp.ToolCalls[0].ID+":read_file" || len(rec.args[0]) < 2 ||
					strings.Join(rec.args[0], "") != resp.ToolCalls[0].Arguments {
					t.Fatalf("sink calls %v, args %v", rec.calls, rec.args)
				}
				if resp.Text != "Let me look." || resp.StopReason != "tool_use" {
					t.Fatalf("text %q stop %q", resp.Text, resp.StopReason)
				}
				if !resp.UsageKnown || resp.Usage != w.wantToolsUsage {
					t.Fatalf("usage %+v, want %+v", resp.Usage, w.wantToolsUsage)
				}
			})
			t.Run("a failure inside the stream", func(t *testing.T) {
				p, _ := serve(t, w, 200, nil, w.midError)
				rec := &recorder{}
				_, err := p.Stream(context.Background(), conversation, rec)
				pe := provider.AsError(err)
				if pe.Category != w.midErrorCategory || !pe.Retryable() {
					t.Fatalf("err %v, want retryable %s", err, w.midErrorCategory)
				}
				if strings.Join(rec.text, "") != "Hel" {
					t.Fatalf("deltas before the failure %q", rec.text)
				}
			})
			t.Run("a stream cut short", func(t *testing.T) {
				p, _ := serve(t, w, 200, nil, w.cut)
				_, err := p.Stream(context.Background(), conversation, &recorder{})
				if pe := provider.AsError(err); pe.Category != provider.StreamError || !pe.Retryable() {
					t.Fatalf("err %v", err)
				}
			})
			t.Run("refusals map to routing's fallback categories", func(t *testing.T) {
				for _, r := range w.errors {
					p, _ := serve(t, w, r.status, r.header, r.body)
					_, err := p.Stream(context.Background(), conversation, &recorder{})
					pe := provider.AsError(err)
					if pe.Category != r.category || pe.Status != r.status || pe.RetryAfter != r.retry || pe.Message == "" || strings.HasPrefix(pe.Message, "{") {
						t.Errorf("HTTP %d: %+v, want %s (retry after %v) with the API's message", r.status, pe, r.category, r.retry)
					}
				}
			})
		})
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

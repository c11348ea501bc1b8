package provider_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/worker/provider"
)

// The recorded wire shapes of the three APIs, as their references
// publish them: OpenAI Chat Completions streaming chunks, Anthropic
// Messages streaming events (message_start, content_block_*,
// message_delta, message_stop; ping and error), OpenAI Responses
// streaming events (response.created ... response.completed).

func wires() []wire {
	return []wire{chatWire(), anthropicWire(), responsesWire()}
}

// sse frames data lines as events separated by blank lines.
func sse(lines ...string) string { return strings.Join(lines, "\n\n") + "\n\n" }

func chatWire() wire {
	c := func(s string) string {
		return `data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[` + s + `]}`
	}
	return wire{
		name: "openai chat completions", path: "/v1/chat/completions", auth: "Bearer sk-test",
		adapter: func(base string) provider.Provider { return &provider.OpenAI{BaseURL: base, APIKey: "sk-test"} },
		base:    func(u string) string { return u + "/v1" },
		text: sse(
			c(`{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":"The user "},"finish_reason":null}`),
			c(`{"index":0,"delta":{"reasoning_content":"greets."},"finish_reason":null}`),
			c(`{"index":0,"delta":{"content":"Hello "},"finish_reason":null}`),
			c(`{"index":0,"delta":{"content":"there."},"finish_reason":null}`),
			c(`{"index":0,"delta":{},"finish_reason":"stop"}`),
			`data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[],"usage":{"prompt_tokens":300,"completion_tokens":20,"total_tokens":320,"prompt_tokens_details":{"cached_tokens":100},"completion_tokens_details":{"reasoning_tokens":5}}}`,
			`data: [DONE]`),
		tools: sse(
			c(`{"index":0,"delta":{"role":"assistant","content":"Let me look."},"finish_reason":null}`),
			c(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a1","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}`),
			c(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\": \"READ"}}]},"finish_reason":null}`),
			c(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ME.md\"}"}}]},"finish_reason":null}`),
			c(`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b2","type":"function","function":{"name":"list_dir","arguments":"{\"path\": \".\"}"}}]},"finish_reason":null}`),
			c(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`),
			`data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"m-1","choices":[],"usage":{"prompt_tokens":350,"completion_tokens":60,"total_tokens":410,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`,
			`data: [DONE]`),
		wantTextUsage:  provider.Usage{InputTokens: 200, CachedInputTokens: 100, OutputTokens: 15, ReasoningTokens: 5},
		wantToolsUsage: provider.Usage{InputTokens: 350, OutputTokens: 60},
		midError: sse(c(`{"index":0,"delta":{"content":"Hel"},"finish_reason":null}`),
			`data: {"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`),
		midErrorCategory: provider.StreamError,
		cut:              sse(c(`{"index":0,"delta":{"content":"Hel"},"finish_reason":null}`)),
		errors: []refusal{
			{429, map[string]string{"Retry-After": "7"}, `{"error":{"message":"Rate limit reached for m-1","type":"requests","code":"rate_limit_exceeded"}}`, provider.RateLimited, 7e9},
			{503, nil, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}`, provider.Overloaded, 0},
			{500, nil, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`, provider.ServerError, 0},
			{401, nil, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, provider.Authentication, 0},
		},
		decode: func(t *testing.T, body []byte) transcript {
			var r struct {
				Model    string `json:"model"`
				Stream   bool   `json:"stream"`
				Messages []struct {
					Role       string  `json:"role"`
					Content    *string `json:"content"`
					ToolCallID string  `json:"tool_call_id"`
					ToolCalls  []struct {
						ID       string `json:"id"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"messages"`
				Tools []struct {
					Function struct{ Name string } `json:"function"`
				} `json:"tools"`
			}
			mustJSON(t, body, &r)
			tr := transcript{Model: r.Model, Stream: r.Stream}
			for _, m := range r.Messages {
				content := ""
				if m.Content != nil {
					content = *m.Content
				}
				switch m.Role {
				case "system":
					tr.System = content
				case "user":
					tr.Users = append(tr.Users, content)
				case "tool":
					tr.Results = append(tr.Results, m.ToolCallID+" "+content)
				}
				for _, c := range m.ToolCalls {
					tr.Calls = append(tr.Calls, c.ID+" "+c.Function.Name+" "+c.Function.Arguments)
				}
			}
			for _, tl := range r.Tools {
				tr.Tools = append(tr.Tools, tl.Function.Name)
			}
			return tr
		},
	}
}

func anthropicWire() wire {
	ev := func(name, data string) string { return "event: " + name + "\ndata: " + data }
	start := func(usage string) string {
		return ev("message_start", `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"m-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":`+usage+`}}`)
	}
	return wire{
		name: "anthropic messages", path: "/v1/messages", auth: "sk-ant-test",
		adapter: func(base string) provider.Provider { return &provider.Anthropic{BaseURL: base, APIKey: "sk-ant-test"} },
		base:    func(u string) string { return u },
		text: sse(
			start(`{"input_tokens":200,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":1}`),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user "}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"greets."}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
			ev("ping", `{"type": "ping"}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello "}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"there."}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":1}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":20}}`),
			ev("message_stop", `{"type":"message_stop"}`)),
		tools: sse(
			start(`{"input_tokens":300,"cache_creation_input_tokens":50,"cache_read_input_tokens":0,"output_tokens":2}`),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me look."}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"read_file","input":{}}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"READ"}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ME.md\"}"}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":1}`),
			ev("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_02","name":"list_dir","input":{}}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \".\"}"}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":2}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":60}}`),
			ev("message_stop", `{"type":"message_stop"}`)),
		wantTextUsage:  provider.Usage{InputTokens: 200, CachedInputTokens: 100, OutputTokens: 20},
		wantToolsUsage: provider.Usage{InputTokens: 350, OutputTokens: 60},
		midError: sse(start(`{"input_tokens":10,"output_tokens":1}`),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`),
			ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)),
		midErrorCategory: provider.Overloaded,
		cut: sse(start(`{"input_tokens":10,"output_tokens":1}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`)),
		errors: []refusal{
			{429, map[string]string{"retry-after": "7"}, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, provider.RateLimited, 7e9},
			{529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, provider.Overloaded, 0},
			{500, nil, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, provider.ServerError, 0},
			{401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, provider.Authentication, 0},
		},
		decode: func(t *testing.T, body []byte) transcript {
			var r struct {
				Model     string `json:"model"`
				MaxTokens int    `json:"max_tokens"`
				System    string `json:"system"`
				Stream    bool   `json:"stream"`
				Messages  []struct {
					Role    string `json:"role"`
					Content []struct {
						Type      string          `json:"type"`
						Text      string          `json:"text"`
						ID        string          `json:"id"`
						Name      string          `json:"name"`
						ToolUseID string          `json:"tool_use_id"`
						Content   string          `json:"content"`
						Input     json.RawMessage `json:"input"`
					} `json:"content"`
				} `json:"messages"`
				Tools []struct {
					Name        string          `json:"name"`
					InputSchema json.RawMessage `json:"input_schema"`
				} `json:"tools"`
			}
			mustJSON(t, body, &r)
			if r.MaxTokens <= 0 {
				t.Errorf("max_tokens %d: the API requires it", r.MaxTokens)
			}
			tr := transcript{Model: r.Model, System: r.System, Stream: r.Stream}
			for i, m := range r.Messages {
				if i > 0 && r.Messages[i-1].Role == m.Role {
					t.Errorf("messages %d and %d are both %s: the API wants them alternating", i-1, i, m.Role)
				}
				for _, b := range m.Content {
					switch {
					case m.Role == "user" && b.Type == "text":
						tr.Users = append(tr.Users, b.Text)
					case m.Role == "assistant" && b.Type == "tool_use":
						tr.Calls = append(tr.Calls, b.ID+" "+b.Name+" "+string(b.Input))
					case m.Role == "user" && b.Type == "tool_result":
						tr.Results = append(tr.Results, b.ToolUseID+" "+b.Content)
					}
				}
			}
			for _, tl := range r.Tools {
				if len(tl.InputSchema) == 0 {
					t.Errorf("tool %s without input_schema", tl.Name)
				}
				tr.Tools = append(tr.Tools, tl.Name)
			}
			return tr
		},
	}
}

func responsesWire() wire {
	ev := func(name, data string) string { return "event: " + name + "\ndata: " + data }
	created := ev("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_67ccd2bed1ec8190b14f964abc054267","object":"response","status":"in_progress","model":"m-1","output":[],"usage":null}}`)
	return wire{
		name: "openai responses", path: "/v1/responses", auth: "Bearer sk-test",
		adapter: func(base string) provider.Provider { return &provider.Responses{BaseURL: base, APIKey: "sk-test"} },
		base:    func(u string) string { return u + "/v1" },
		text: sse(created,
			ev("response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_67ccd2bed1ec8190b14f964abc054267","status":"in_progress"}}`),
			ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`),
			ev("response.reasoning_summary_text.delta", `{"type":"response.reasoning_summary_text.delta","sequence_number":3,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"The user "}`),
			ev("response.reasoning_summary_text.delta", `{"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"greets."}`),
			ev("response.output_item.done", `{"type":"response.output_item.done","sequence_number":5,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"The user greets."}]}}`),
			ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":6,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`),
			ev("response.content_part.added", `{"type":"response.content_part.added","sequence_number":7,"item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`),
			ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":8,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Hello "}`),
			ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":9,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"there."}`),
			ev("response.output_text.done", `{"type":"response.output_text.done","sequence_number":10,"item_id":"msg_1","output_index":1,"content_index":0,"text":"Hello there."}`),
			ev("response.completed", `{"type":"response.completed","sequence_number":11,"response":{"id":"resp_67ccd2bed1ec8190b14f964abc054267","object":"response","status":"completed","model":"m-1","usage":{"input_tokens":300,"input_tokens_details":{"cached_tokens":100},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":5},"total_tokens":320}}}`)),
		tools: sse(created,
			ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`),
			ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Let me look."}`),
			ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":3,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_r1","name":"read_file"}}`),
			ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":4,"item_id":"fc_1","output_index":1,"delta":"{\"path\": \"READ"}`),
			ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_1","output_index":1,"delta":"ME.md\"}"}`),
			ev("response.function_call_arguments.done", `{"type":"response.function_call_arguments.done","sequence_number":6,"item_id":"fc_1","output_index":1,"arguments":"{\"path\": \"README.md\"}"}`),
			ev("response.output_item.done", `{"type":"response.output_item.done","sequence_number":7,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"path\": \"README.md\"}","call_id":"call_r1","name":"read_file"}}`),
			ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":8,"output_index":2,"item":{"id":"fc_2","type":"function_call","status":"in_progress","arguments":"","call_id":"call_r2","name":"list_dir"}}`),
			ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_2","output_index":2,"delta":"{\"path\": \".\"}"}`),
			ev("response.output_item.done", `{"type":"response.output_item.done","sequence_number":10,"output_index":2,"item":{"id":"fc_2","type":"function_call","status":"completed","arguments":"{\"path\": \".\"}","call_id":"call_r2","name":"list_dir"}}`),
			ev("response.completed", `{"type":"response.completed","sequence_number":11,"response":{"id":"resp_67ccd2bed1ec8190b14f964abc054267","status":"completed","usage":{"input_tokens":350,"input_tokens_details":{"cached_tokens":0},"output_tokens":60,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":410}}}`)),
		wantTextUsage:  provider.Usage{InputTokens: 200, CachedInputTokens: 100, OutputTokens: 15, ReasoningTokens: 5},
		wantToolsUsage: provider.Usage{InputTokens: 350, OutputTokens: 60},
		midError: sse(created,
			ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel"}`),
			ev("error", `{"type":"error","sequence_number":2,"code":"server_error","message":"The server had an error while processing your request.","param":null}`)),
		midErrorCategory: provider.StreamError,
		cut: sse(created,
			ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel"}`)),
		errors: []refusal{
			{429, map[string]string{"Retry-After": "7"}, `{"error":{"message":"Rate limit reached for m-1","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, provider.RateLimited, 7e9},
			{503, nil, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}`, provider.Overloaded, 0},
			{500, nil, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`, provider.ServerError, 0},
			{401, nil, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, provider.Authentication, 0},
		},
		decode: func(t *testing.T, body []byte) transcript {
			var r struct {
				Model        string `json:"model"`
				Instructions string `json:"instructions"`
				Stream       bool   `json:"stream"`
				Store        *bool  `json:"store"`
				Input        []struct {
					Type      string `json:"type"`
					Role      string `json:"role"`
					Content   string `json:"content"`
					CallID    string `json:"call_id"`
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
					Output    string `json:"output"`
				} `json:"input"`
				Tools []struct{ Type, Name string } `json:"tools"`
			}
			mustJSON(t, body, &r)
			if r.Store == nil || *r.Store {
				t.Errorf("store %v: nothing is kept on the provider's side", r.Store)
			}
			tr := transcript{Model: r.Model, System: r.Instructions, Stream: r.Stream}
			for _, it := range r.Input {
				switch {
				case it.Type == "message" && it.Role == "user":
					tr.Users = append(tr.Users, it.Content)
				case it.Type == "function_call":
					tr.Calls = append(tr.Calls, it.CallID+" "+it.Name+" "+it.Arguments)
				case it.Type == "function_call_output":
					tr.Results = append(tr.Results, it.CallID+" "+it.Output)
				}
			}
			for _, tl := range r.Tools {
				if tl.Type != "function" {
					t.Errorf("tool %s of type %q", tl.Name, tl.Type)
				}
				tr.Tools = append(tr.Tools, tl.Name)
			}
			return tr
		},
	}
}

func mustJSON(t *testing.T, body []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("the request is not JSON of the API's shape: %v\n%s", err, body)
	}
}

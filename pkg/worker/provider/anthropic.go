package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Anthropic is a client of the Anthropic Messages API (POST /v1/messages)
// with streaming, tool use and extended thinking.
type Anthropic struct {
	// BaseURL is the API's root, without /v1 (default
	// https://api.anthropic.com).
	BaseURL string
	// APIKey is sent as x-api-key.
	APIKey string
	// ID is the provider id recorded in facts (default "anthropic").
	ID string
	// MaxTokens bounds a reply (the API requires it; default 8192).
	MaxTokens int
	// ThinkingBudget, when above 0, turns extended thinking on with this
	// many tokens; the thinking streams as reasoning deltas.
	ThinkingBudget int
	Client         *http.Client
}

// AnthropicVersion is the API version every request names.
const AnthropicVersion = "2023-06-01"

// Name implements Provider.
func (a *Anthropic) Name() string {
	if a.ID != "" {
		return a.ID
	}
	return "anthropic"
}

type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

type anTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anRequest struct {
	Model     string      `json:"model"`
	MaxTokens int         `json:"max_tokens"`
	System    string      `json:"system,omitempty"`
	Messages  []anMessage `json:"messages"`
	Tools     []anTool    `json:"tools,omitempty"`
	Stream    bool        `json:"stream"`
	Thinking  *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking,omitempty"`
}

type anUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

type anEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		ID    string  `json:"id"`
		Usage anUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *anBlock `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// anthropicRequest is the transcript in the Messages shape: the system
// prompt apart, an assistant's tool calls as tool_use blocks, and the
// tool results that follow them as one user message of tool_result
// blocks.
func (a *Anthropic) request(req Request) anRequest {
	body := anRequest{Model: req.Model, MaxTokens: a.MaxTokens, Stream: true}
	if body.MaxTokens <= 0 {
		body.MaxTokens = 8192
	}
	if a.ThinkingBudget > 0 {
		body.Thinking = &struct {
			Type         string `json:"type"`
			BudgetTokens int    `json:"budget_tokens"`
		}{"enabled", a.ThinkingBudget}
		body.MaxTokens = max(body.MaxTokens, a.ThinkingBudget+1024)
	}
	var system []string
	add := func(role string, blocks ...anBlock) {
		if n := len(body.Messages); n > 0 && body.Messages[n-1].Role == role {
			body.Messages[n-1].Content = append(body.Messages[n-1].Content, blocks...)
			return
		}
		body.Messages = append(body.Messages, anMessage{Role: role, Content: blocks})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			system = append(system, m.Content)
		case "assistant":
			var blocks []anBlock
			if m.Content != "" {
				blocks = append(blocks, anBlock{Type: "text", Text: m.Content})
			}
			for _, c := range m.ToolCalls {
				input := json.RawMessage(c.Arguments)
				if !json.Valid(input) || len(input) == 0 {
					input = json.RawMessage("{}")
				}
				blocks = append(blocks, anBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
			}
			if len(blocks) > 0 {
				add("assistant", blocks...)
			}
		case "tool":
			add("user", anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content})
		default:
			add("user", anBlock{Type: "text", Text: m.Content})
		}
	}
	body.System = strings.Join(system, "\n\n")
	for _, t := range req.Tools {
		schema := json.RawMessage(t.Schema)
		if t.Schema == "" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		body.Tools = append(body.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return body
}

// Stream implements Provider.
func (a *Anthropic) Stream(ctx context.Context, req Request, sink Sink) (Response, error) {
	base := strings.TrimRight(a.BaseURL, "/")
	if base == "" {
		base = "https://api.anthropic.com"
	}
	h := http.Header{}
	h.Set("anthropic-version", AnthropicVersion)
	if a.APIKey != "" {
		h.Set("x-api-key", a.APIKey)
	}
	res, err := post(ctx, a.Client, base+"/v1/messages", h, a.request(req), anthropicError)
	if err != nil {
		return Response{}, err
	}
	defer res.Body.Close()
	var (
		resp  Response
		text  strings.Builder
		calls []ToolCall
		// callAt maps a content block's index to its tool call.
		callAt  = map[int]int{}
		stopped bool
	)
	if id := res.Header.Get("request-id"); id != "" {
		resp.RequestID = id
	}
	_, err = readSSE(ctx, res.Body, func(_, data string) (bool, error) {
		var ev anEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return false, &Error{Category: StreamError, Message: "malformed event: " + err.Error()}
		}
		switch ev.Type {
		case "message_start":
			if ev.Message != nil {
				if ev.Message.ID != "" && resp.RequestID == "" {
					resp.RequestID = ev.Message.ID
				}
				resp.Usage = anthropicUsage(ev.Message.Usage)
				resp.UsageKnown = true
			}
		case "content_block_start":
			if b := ev.ContentBlock; b != nil && b.Type == "tool_use" {
				if len(calls) >= 1024 {
					return false, &Error{Category: StreamError, Message: "too many tool calls"}
				}
				callAt[ev.Index] = len(calls)
				calls = append(calls, ToolCall{ID: b.ID, Name: b.Name})
				sink.ToolCall(len(calls)-1, b.ID, b.Name)
			}
		case "content_block_delta":
			if ev.Delta == nil {
				break
			}
			switch ev.Delta.Type {
			case "text_delta":
				text.WriteString(ev.Delta.Text)
				sink.Text(ev.Delta.Text)
			case "thinking_delta":
				sink.Reasoning(ev.Delta.Thinking)
			case "input_json_delta":
				i, ok := callAt[ev.Index]
				if !ok {
					return false, &Error{Category: StreamError, Message: fmt.Sprintf("input for content block %d, which is not a tool_use", ev.Index)}
				}
				calls[i].Arguments += ev.Delta.PartialJSON
				sink.ToolArgs(i, ev.Delta.PartialJSON)
			}
		case "message_delta":
			if ev.Delta != nil && ev.Delta.StopReason != "" {
				resp.StopReason = ev.Delta.StopReason
			}
			if ev.Usage != nil {
				// The final counts: output, and the input ones when sent.
				resp.Usage.OutputTokens = ev.Usage.OutputTokens
				if ev.Usage.InputTokens+ev.Usage.CacheReadInputTokens+ev.Usage.CacheCreationInputTokens > 0 {
					out := resp.Usage.OutputTokens
					resp.Usage = anthropicUsage(*ev.Usage)
					resp.Usage.OutputTokens = out
				}
				resp.UsageKnown = true
			}
		case "message_stop":
			stopped = true
			return true, nil
		case "error":
			if ev.Error != nil {
				e := &Error{Category: StreamError, Message: ev.Error.Message}
				switch ev.Error.Type {
				case "overloaded_error":
					e.Category = Overloaded
				case "rate_limit_error":
					e.Category = RateLimited
				}
				return false, e
			}
			return false, &Error{Category: StreamError, Message: "an error event without an error"}
		}
		return false, nil
	})
	if err != nil {
		return Response{}, err
	}
	if !stopped {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, &Error{Category: StreamError, Message: "the stream ended before message_stop"}
	}
	if err := checkCalls(calls); err != nil {
		return Response{}, err
	}
	resp.Text, resp.ToolCalls = text.String(), calls
	if resp.StopReason == "" {
		resp.StopReason = "end_turn"
	}
	return resp, nil
}

// anthropicUsage is the disjoint usage: input is what was not read from
// the cache (cache writes count as input), cached input what was.
func anthropicUsage(u anUsage) Usage {
	return Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens, CachedInputTokens: u.CacheReadInputTokens, OutputTokens: u.OutputTokens}
}

// anthropicError maps a refused call: 429 rate_limit_error, 529
// overloaded_error, 5xx api_error, 401/403 the key, a prompt too long.
func anthropicError(res *http.Response) *Error {
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	msg, typ := strings.TrimSpace(string(raw)), ""
	var wrapped struct {
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &wrapped) == nil && wrapped.Error != nil {
		msg, typ = wrapped.Error.Message, wrapped.Error.Type
	}
	e := &Error{Status: res.StatusCode, Message: msg}
	switch {
	case res.StatusCode == http.StatusTooManyRequests || typ == "rate_limit_error":
		e.Category, e.RetryAfter = RateLimited, retryAfter(res.Header)
	case res.StatusCode == 529 || res.StatusCode == http.StatusServiceUnavailable || typ == "overloaded_error":
		e.Category = Overloaded
	case res.StatusCode == http.StatusGatewayTimeout:
		e.Category = Timeout
	case res.StatusCode >= 500:
		e.Category = ServerError
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		e.Category = Authentication
	case strings.Contains(msg, "prompt is too long") || res.StatusCode == http.StatusRequestEntityTooLarge:
		e.Category = ContextLength
	default:
		e.Category = BadRequest
	}
	return e
}

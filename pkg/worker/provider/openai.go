package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// OpenAI is an OpenAI-compatible chat-completions client with streaming
// and tool calls: hosted APIs and local servers (vLLM, Ollama,
// llama.cpp) speak the same protocol.
type OpenAI struct {
	// BaseURL up to and including the version, e.g.
	// "https://api.openai.com/v1" or "http://localhost:11434/v1".
	BaseURL string
	// APIKey is sent as a bearer token when set (local servers need none).
	APIKey string
	// ID is the provider id recorded in facts (default "openai").
	ID     string
	Client *http.Client
}

// Name implements Provider.
func (o *OpenAI) Name() string {
	if o.ID != "" {
		return o.ID
	}
	return "openai"
}

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

type oaRequest struct {
	Model         string      `json:"model"`
	Messages      []oaMessage `json:"messages"`
	Tools         []oaTool    `json:"tools,omitempty"`
	Stream        bool        `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type oaChunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Delta struct {
			Content          string       `json:"content"`
			ReasoningContent string       `json:"reasoning_content"`
			Reasoning        string       `json:"reasoning"`
			ToolCalls        []oaToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Error *oaError `json:"error"`
}

type oaError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

func encodeRequest(req Request) ([]byte, error) {
	body := oaRequest{Model: req.Model, Stream: true}
	body.StreamOptions.IncludeUsage = true
	for _, m := range req.Messages {
		content := m.Content
		om := oaMessage{Role: m.Role, Content: &content, ToolCallID: m.ToolCallID}
		if m.Role == "assistant" && content == "" && len(m.ToolCalls) > 0 {
			om.Content = nil
		}
		for _, c := range m.ToolCalls {
			tc := oaToolCall{ID: c.ID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments
			om.ToolCalls = append(om.ToolCalls, tc)
		}
		body.Messages = append(body.Messages, om)
	}
	for _, t := range req.Tools {
		ot := oaTool{Type: "function"}
		ot.Function.Name, ot.Function.Description = t.Name, t.Description
		if t.Schema != "" {
			ot.Function.Parameters = json.RawMessage(t.Schema)
		}
		body.Tools = append(body.Tools, ot)
	}
	return json.Marshal(body)
}

// Stream implements Provider.
func (o *OpenAI) Stream(ctx context.Context, req Request, sink Sink) (Response, error) {
	body, err := encodeRequest(req)
	if err != nil {
		return Response{}, &Error{Category: BadRequest, Message: err.Error()}
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(o.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return Response{}, &Error{Category: BadRequest, Message: err.Error()}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if o.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	client := o.Client
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, &Error{Category: Network, Message: err.Error()}
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return Response{}, httpError(res)
	}
	return readStream(ctx, res.Body, sink)
}

// httpError maps a refused call to a category: 429 is a rate limit (with
// the server's Retry-After), 5xx the server's failure, 401/403 the key.
func httpError(res *http.Response) *Error {
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	msg := strings.TrimSpace(string(raw))
	var wrapped struct {
		Error *oaError `json:"error"`
	}
	if json.Unmarshal(raw, &wrapped) == nil && wrapped.Error != nil && wrapped.Error.Message != "" {
		msg = wrapped.Error.Message
	}
	e := &Error{Status: res.StatusCode, Message: msg}
	switch {
	case res.StatusCode == http.StatusTooManyRequests:
		e.Category = RateLimited
		if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s >= 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
	case res.StatusCode == http.StatusServiceUnavailable || res.StatusCode == 529:
		e.Category = Overloaded
	case res.StatusCode == http.StatusGatewayTimeout:
		e.Category = Timeout
	case res.StatusCode >= 500:
		e.Category = ServerError
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		e.Category = Authentication
	case strings.Contains(msg, "context_length") || strings.Contains(msg, "maximum context length"):
		e.Category = ContextLength
	default:
		e.Category = BadRequest
	}
	return e
}

// readStream folds server-sent events into a Response, calling the sink
// as chunks arrive. Tool-call arguments arrive split across chunks and
// are joined by call index; usage comes in a last chunk with no choices.
// A stream that stops without [DONE] or a finish reason failed.
func readStream(ctx context.Context, body io.Reader, sink Sink) (Response, error) {
	var (
		resp     Response
		text     strings.Builder
		calls    []ToolCall
		finished bool
		done     bool
	)
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var data strings.Builder
	handle := func(payload string) error {
		if payload == "[DONE]" {
			done = true
			return nil
		}
		var ch oaChunk
		if err := json.Unmarshal([]byte(payload), &ch); err != nil {
			return &Error{Category: StreamError, Message: "malformed chunk: " + err.Error()}
		}
		if ch.Error != nil {
			return &Error{Category: StreamError, Message: ch.Error.Message}
		}
		if ch.ID != "" {
			resp.RequestID = ch.ID
		}
		for _, c := range ch.Choices {
			if r := c.Delta.ReasoningContent + c.Delta.Reasoning; r != "" {
				sink.Reasoning(r)
			}
			if c.Delta.Content != "" {
				text.WriteString(c.Delta.Content)
				sink.Text(c.Delta.Content)
			}
			for _, tc := range c.Delta.ToolCalls {
				i := len(calls) - 1
				if tc.Index != nil {
					i = *tc.Index
				}
				if i < 0 || i > len(calls) || i > 1024 {
					return &Error{Category: StreamError, Message: fmt.Sprintf("tool call index %d out of order", i)}
				}
				if i == len(calls) {
					calls = append(calls, ToolCall{ID: tc.ID, Name: tc.Function.Name})
					sink.ToolCall(i, tc.ID, tc.Function.Name)
				}
				if tc.Function.Arguments != "" {
					calls[i].Arguments += tc.Function.Arguments
					sink.ToolArgs(i, tc.Function.Arguments)
				}
			}
			if c.FinishReason != nil && *c.FinishReason != "" {
				finished = true
				resp.StopReason = stopReason(*c.FinishReason)
			}
		}
		if u := ch.Usage; u != nil {
			resp.UsageKnown = true
			// prompt_tokens counts the cached ones and completion_tokens
			// the reasoning ones; Usage's parts are disjoint.
			resp.Usage = Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
			if u.PromptTokensDetails != nil {
				resp.Usage.CachedInputTokens = u.PromptTokensDetails.CachedTokens
				resp.Usage.InputTokens -= u.PromptTokensDetails.CachedTokens
			}
			if u.CompletionTokensDetails != nil {
				resp.Usage.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
				resp.Usage.OutputTokens -= u.CompletionTokensDetails.ReasoningTokens
			}
		}
		return nil
	}
	for !done && sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				if err := handle(data.String()); err != nil {
					return Response{}, err
				}
				data.Reset()
			}
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
		// Comments (":") and other fields (event:, id:, retry:) are ignored.
	}
	if err := sc.Err(); err != nil && !done {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, &Error{Category: StreamError, Message: "stream broke: " + err.Error()}
	}
	if !done && data.Len() > 0 {
		if err := handle(data.String()); err != nil {
			return Response{}, err
		}
	}
	if !done && !finished {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, &Error{Category: StreamError, Message: "the stream ended before the model finished"}
	}
	for i, c := range calls {
		if c.Arguments == "" {
			calls[i].Arguments = "{}"
		}
		if !json.Valid([]byte(calls[i].Arguments)) {
			return Response{}, &Error{Category: StreamError, Message: fmt.Sprintf("tool call %s (%s): arguments are not JSON", c.ID, c.Name)}
		}
	}
	resp.Text, resp.ToolCalls = text.String(), calls
	if resp.StopReason == "" {
		resp.StopReason = "end_turn"
	}
	return resp, nil
}

func stopReason(finish string) string {
	switch finish {
	case "stop":
		return "end_turn"
	case "tool_calls", "function_call":
		return "tool_use"
	case "length":
		return "max_tokens"
	}
	return finish
}

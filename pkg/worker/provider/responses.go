package provider

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// Responses is a client of the OpenAI Responses API (POST /responses)
// with streaming, function calls and reasoning summaries. Nothing is
// stored on the provider's side (store: false): every call sends the
// transcript.
type Responses struct {
	// BaseURL up to and including the version (default
	// https://api.openai.com/v1).
	BaseURL string
	// APIKey is sent as a bearer token.
	APIKey string
	// ID is the provider id recorded in facts (default "openai").
	ID string
	// ReasoningEffort, when set ("low", "medium", "high"), asks a
	// reasoning model for that effort and a summary of its reasoning,
	// which streams as reasoning deltas.
	ReasoningEffort string
	Client          *http.Client
}

// Name implements Provider.
func (r *Responses) Name() string {
	if r.ID != "" {
		return r.ID
	}
	return "openai"
}

type rsItem struct {
	Type      string `json:"type,omitempty"`
	Role      string `json:"role,omitempty"`
	Content   string `json:"content,omitempty"`
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Output    string `json:"output,omitempty"`
}

type rsTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type rsRequest struct {
	Model        string   `json:"model"`
	Instructions string   `json:"instructions,omitempty"`
	Input        []rsItem `json:"input"`
	Tools        []rsTool `json:"tools,omitempty"`
	Stream       bool     `json:"stream"`
	Store        bool     `json:"store"`
	Reasoning    *struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
	} `json:"reasoning,omitempty"`
}

type rsUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

type rsResponse struct {
	ID                string   `json:"id"`
	Status            string   `json:"status"`
	Usage             *rsUsage `json:"usage"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rsOutItem is an output item of a streamed response, as far as it is
// read (a message's content is an array there).
type rsOutItem struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type rsEvent struct {
	Type        string      `json:"type"`
	OutputIndex int         `json:"output_index"`
	Delta       string      `json:"delta"`
	Item        *rsOutItem  `json:"item"`
	Response    *rsResponse `json:"response"`
	Code        string      `json:"code"`
	Message     string      `json:"message"`
}

// request is the transcript as input items: system messages as
// instructions, an assistant's tool calls as function_call items, tool
// results as function_call_output items.
func (r *Responses) request(req Request) rsRequest {
	body := rsRequest{Model: req.Model, Stream: true}
	if r.ReasoningEffort != "" {
		body.Reasoning = &struct {
			Effort  string `json:"effort"`
			Summary string `json:"summary"`
		}{r.ReasoningEffort, "auto"}
	}
	var system []string
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			system = append(system, m.Content)
		case "assistant":
			if m.Content != "" {
				body.Input = append(body.Input, rsItem{Type: "message", Role: "assistant", Content: m.Content})
			}
			for _, c := range m.ToolCalls {
				body.Input = append(body.Input, rsItem{Type: "function_call", CallID: c.ID, Name: c.Name, Arguments: c.Arguments})
			}
		case "tool":
			body.Input = append(body.Input, rsItem{Type: "function_call_output", CallID: m.ToolCallID, Output: m.Content})
		default:
			body.Input = append(body.Input, rsItem{Type: "message", Role: "user", Content: m.Content})
		}
	}
	body.Instructions = strings.Join(system, "\n\n")
	for _, t := range req.Tools {
		schema := json.RawMessage(t.Schema)
		if t.Schema == "" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		body.Tools = append(body.Tools, rsTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schema})
	}
	return body
}

// Stream implements Provider.
func (r *Responses) Stream(ctx context.Context, req Request, sink Sink) (Response, error) {
	base := strings.TrimRight(r.BaseURL, "/")
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	h := http.Header{}
	if r.APIKey != "" {
		h.Set("Authorization", "Bearer "+r.APIKey)
	}
	res, err := post(ctx, r.Client, base+"/responses", h, r.request(req), httpError)
	if err != nil {
		return Response{}, err
	}
	defer res.Body.Close()
	var (
		resp  Response
		text  strings.Builder
		calls []ToolCall
		// callAt maps an output index to its function call.
		callAt = map[int]int{}
		ended  bool
	)
	_, err = readSSE(ctx, res.Body, func(_, data string) (bool, error) {
		if data == "[DONE]" {
			return true, nil
		}
		var ev rsEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return false, &Error{Category: StreamError, Message: "malformed event: " + err.Error()}
		}
		switch ev.Type {
		case "response.created":
			if ev.Response != nil {
				resp.RequestID = ev.Response.ID
			}
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
			sink.Text(ev.Delta)
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			sink.Reasoning(ev.Delta)
		case "response.output_item.added":
			if it := ev.Item; it != nil && it.Type == "function_call" {
				if len(calls) >= 1024 {
					return false, &Error{Category: StreamError, Message: "too many tool calls"}
				}
				callAt[ev.OutputIndex] = len(calls)
				calls = append(calls, ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
				sink.ToolCall(len(calls)-1, it.CallID, it.Name)
				if it.Arguments != "" {
					sink.ToolArgs(len(calls)-1, it.Arguments)
				}
			}
		case "response.function_call_arguments.delta":
			i, ok := callAt[ev.OutputIndex]
			if !ok {
				return false, &Error{Category: StreamError, Message: "arguments for an output item that is not a function call"}
			}
			calls[i].Arguments += ev.Delta
			sink.ToolArgs(i, ev.Delta)
		case "response.output_item.done":
			// The item whole: its arguments are what counts.
			if i, ok := callAt[ev.OutputIndex]; ok && ev.Item != nil && ev.Item.Arguments != "" {
				calls[i].Arguments = ev.Item.Arguments
			}
		case "response.completed", "response.incomplete":
			ended = true
			if rr := ev.Response; rr != nil {
				if rr.Usage != nil {
					u := rr.Usage
					cached, reasoning := u.InputTokensDetails.CachedTokens, u.OutputTokensDetails.ReasoningTokens
					resp.Usage = Usage{InputTokens: u.InputTokens - cached, CachedInputTokens: cached,
						OutputTokens: u.OutputTokens - reasoning, ReasoningTokens: reasoning}
					resp.UsageKnown = true
				}
				if ev.Type == "response.incomplete" {
					resp.StopReason = "incomplete"
					if d := rr.IncompleteDetails; d != nil && d.Reason == "max_output_tokens" {
						resp.StopReason = "max_tokens"
					}
				}
			}
			return true, nil
		case "response.failed":
			e := &Error{Category: StreamError, Message: "the response failed"}
			if rr := ev.Response; rr != nil && rr.Error != nil {
				e.Message = rr.Error.Code + ": " + rr.Error.Message
				if rr.Error.Code == "rate_limit_exceeded" {
					e.Category = RateLimited
				}
			}
			return false, e
		case "error":
			e := &Error{Category: StreamError, Message: strings.TrimSpace(ev.Code + ": " + ev.Message)}
			if ev.Code == "rate_limit_exceeded" {
				e.Category = RateLimited
			}
			return false, e
		}
		return false, nil
	})
	if err != nil {
		return Response{}, err
	}
	if !ended {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, &Error{Category: StreamError, Message: "the stream ended before response.completed"}
	}
	if err := checkCalls(calls); err != nil {
		return Response{}, err
	}
	resp.Text, resp.ToolCalls = text.String(), calls
	if resp.StopReason == "" {
		resp.StopReason = "end_turn"
		if len(calls) > 0 {
			resp.StopReason = "tool_use"
		}
	}
	return resp, nil
}

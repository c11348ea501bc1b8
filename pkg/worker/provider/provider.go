// Package provider is the model-provider side of a worker: one interface
// that streams a model call, and the adapters behind it (a scripted
// provider for demos and tests, an OpenAI-compatible chat-completions
// client, the Anthropic Messages and the OpenAI Responses clients). Adapters translate a native stream into Sink calls; the worker
// turns those into model.*, reasoning.* and tool.* facts.
package provider

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Message is one transcript entry in the chat-completions shape every
// adapter understands.
type Message struct {
	// Role: "system", "user", "assistant" or "tool".
	Role    string
	Content string
	// ToolCalls an assistant message asked for.
	ToolCalls []ToolCall
	// ToolCallID a tool message answers.
	ToolCallID string
	// Summarizes is set on an assistant message that is a compaction
	// summary: how many model steps (assistant messages) it stands for.
	// Adapters send it as an ordinary assistant message; the scripted
	// provider counts it as that many steps, so a compacted transcript
	// replays the same script.
	Summarizes int
}

// ToolCall is one call the model asked for; Arguments is JSON text.
type ToolCall struct {
	ID, Name, Arguments string
}

// Tool is a tool offered to the model; Schema is a JSON Schema object.
type Tool struct {
	Name, Description, Schema string
}

// Request is one model call.
type Request struct {
	Model    string
	Messages []Message
	Tools    []Tool
}

// Usage is a call's token usage in disjoint parts, as routing prices
// them (each part at its own price, summed): InputTokens are the input
// tokens not read from a prompt cache, CachedInputTokens those that were;
// OutputTokens are the output tokens that are not reasoning,
// ReasoningTokens those that are. An adapter whose API counts cached
// tokens inside its input count (OpenAI) subtracts them.
type Usage struct {
	InputTokens, OutputTokens, CachedInputTokens, ReasoningTokens int64
}

// Response is what a completed stream produced.
type Response struct {
	Text       string
	ToolCalls  []ToolCall
	StopReason string
	Usage      Usage
	// UsageKnown is false when the provider reported no usage: the cost
	// is then unknown, never zero.
	UsageKnown bool
	// RequestID is the provider's id of the call, when it gave one.
	RequestID string
}

// Sink receives a stream as it arrives. Calls come from the Stream
// goroutine, in stream order.
type Sink interface {
	Text(delta string)
	Reasoning(delta string)
	// ToolCall announces call index i (its id and name are known once the
	// first chunk of it arrives).
	ToolCall(i int, id, name string)
	// ToolArgs is a chunk of call i's arguments.
	ToolArgs(i int, chunk string)
}

// Provider streams model calls.
type Provider interface {
	// Name is the provider id recorded in model.* facts.
	Name() string
	// Stream runs one call. An error that is the provider's is an *Error.
	Stream(ctx context.Context, req Request, sink Sink) (Response, error)
}

// Categories of provider failures (model.failed category). They map to
// routing's failure categories for a fallback.
const (
	RateLimited    = "rate_limited"
	Overloaded     = "overloaded"
	ServerError    = "server_error"
	Timeout        = "timeout"
	Network        = "network"
	Authentication = "authentication"
	ContextLength  = "context_length"
	BadRequest     = "bad_request"
	StreamError    = "stream_error"
	ScriptEnded    = "script_ended"
)

// Error is a provider's failure.
type Error struct {
	Category string
	// Status is the HTTP status (0 when none).
	Status int
	// RetryAfter the provider asked for (0 when it did not say).
	RetryAfter time.Duration
	Message    string
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("provider %s (HTTP %d): %s", e.Category, e.Status, e.Message)
	}
	return fmt.Sprintf("provider %s: %s", e.Category, e.Message)
}

// Retryable says whether another attempt (or another model) may succeed.
func (e *Error) Retryable() bool {
	switch e.Category {
	case RateLimited, Overloaded, ServerError, Timeout, Network, StreamError:
		return true
	}
	return false
}

// AsError returns err's *Error, or a network error wrapping it.
func AsError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Category: Timeout, Message: err.Error()}
	}
	return &Error{Category: Network, Message: err.Error()}
}

package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Elicitation: a server asks the user for structured input in the middle
// of a tool call (elicitation/create, form mode: a message and a flat
// JSON Schema). The worker declares the capability and hands each request
// to the Elicitor of the call it belongs to (WithElicitor on the call's
// context), which asks a person and answers accept (with the content),
// decline or cancel.
//
// What a server sends is not trusted:
//   - a request is tied to the server's call in flight: with none (the
//     server asks between calls) or with several at once (it cannot be
//     told which call, nor whose turn, asks) it is declined unasked;
//   - a call is asked at most Options.MaxElicitations times; later
//     requests are declined;
//   - the message is at most MaxElicitationMessage bytes and the schema
//     at most MaxElicitationSchema: larger ones are declined;
//   - url mode (send the user to a URL) is not declared, and declined.
//
// The call's own timeout (Options.CallTimeout) does not run while a person
// is asked; the elicitation's wait is bounded by Options.ElicitationTimeout.

// Actions of an elicitation's answer.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// Bounds on what a server may ask.
const (
	MaxElicitationMessage = 8192
	MaxElicitationSchema  = 32768
	// DefaultMaxElicitations is how many times one call may ask by default.
	DefaultMaxElicitations = 4
)

// Elicitation is a server's request for input during a call.
type Elicitation struct {
	// Server is the server's name in the config; Tool the worker's name of
	// the tool being called (mcp__<server>__<tool>).
	Server, Tool string
	// Message is what the server asks, as it sent it (valid UTF-8).
	Message string
	// Schema is the server's requestedSchema (a JSON object; the SDK
	// checked it is the flat object the protocol allows).
	Schema json.RawMessage
	// Seq numbers the call's elicitations from 1.
	Seq int
	// Timeout bounds the wait for the answer (Options.ElicitationTimeout).
	Timeout time.Duration
}

// ElicitAnswer is the answer the server gets: Action is ElicitAccept,
// ElicitDecline or ElicitCancel; Content, with accept, the input.
type ElicitAnswer struct {
	Action  string
	Content map[string]any
}

// Elicitor asks a person for an Elicitation. ctx ends when the call does
// (the turn interrupted, the call timed out or the server cancelled its
// request); an error answers the server cancel.
type Elicitor func(ctx context.Context, e Elicitation) (ElicitAnswer, error)

type elicitorKey struct{}

// WithElicitor is ctx for a call whose elicitations e answers. A call
// without one declines every elicitation.
func WithElicitor(ctx context.Context, e Elicitor) context.Context {
	return context.WithValue(ctx, elicitorKey{}, e)
}

func elicitorOf(ctx context.Context) Elicitor {
	e, _ := ctx.Value(elicitorKey{}).(Elicitor)
	return e
}

// call is a tool call in flight: elicitations find it.
type call struct {
	sess   *mcp.ClientSession
	ctx    context.Context
	tool   *Tool
	elicit Elicitor
	clock  *clock
	// asked counts its elicitations (under the server's mu).
	asked int
}

// track registers c as in flight until the returned func is called.
func (s *server) track(c *call) func() {
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[*call]struct{}{}
	}
	s.calls[c] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.calls, c)
		s.mu.Unlock()
	}
}

var (
	declined  = &mcp.ElicitResult{Action: ElicitDecline}
	cancelled = &mcp.ElicitResult{Action: ElicitCancel}
)

// elicit answers an elicitation/create of the server's session sess.
func (s *server) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	log := s.m.opts.Logger.With("mcp_server", s.name)
	refuse := func(why string, args ...any) (*mcp.ElicitResult, error) {
		log.Warn("MCP server: an elicitation is declined unasked: "+why, args...)
		return declined, nil
	}
	p := req.Params
	if p == nil {
		return refuse("no params")
	}
	if p.Mode != "" && p.Mode != "form" {
		return refuse("only form mode is supported", "mode", clipUTF8(p.Mode, 32))
	}
	s.mu.Lock()
	var mine []*call
	for c := range s.calls {
		if c.sess == req.Session {
			mine = append(mine, c)
		}
	}
	var c *call
	if len(mine) == 1 {
		c = mine[0]
		c.asked++
	}
	s.mu.Unlock()
	switch {
	case len(mine) == 0:
		return refuse("no call of the server is in flight")
	case len(mine) > 1:
		return refuse("several calls of the server are in flight; which one asks cannot be told", "calls", len(mine))
	case c.elicit == nil:
		return refuse("the call has nobody to ask", "tool", c.tool.spec.Name)
	case c.asked > s.m.opts.MaxElicitations:
		return refuse("the call asked too often", "tool", c.tool.spec.Name, "max", s.m.opts.MaxElicitations)
	case len(p.Message) > MaxElicitationMessage:
		return refuse("the message is too long", "bytes", len(p.Message), "max", MaxElicitationMessage)
	}
	schema := json.RawMessage(`{"type":"object"}`)
	if p.RequestedSchema != nil {
		raw, err := json.Marshal(p.RequestedSchema)
		if err != nil || len(raw) == 0 || raw[0] != '{' {
			return refuse("the requested schema is not a JSON object")
		}
		schema = raw
	}
	if len(schema) > MaxElicitationSchema {
		return refuse("the requested schema is too large", "bytes", len(schema), "max", MaxElicitationSchema)
	}
	// The answer is asked for while the call waits: neither the server's
	// cancelling its request nor the call's end leave it waiting.
	ectx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if c.clock != nil {
		c.clock.pause()
		defer c.clock.resume()
	}
	ans, err := c.elicit(ectx, Elicitation{Server: s.name, Tool: c.tool.spec.Name, Message: clipUTF8(p.Message, MaxElicitationMessage),
		Schema: schema, Seq: c.asked, Timeout: s.m.opts.ElicitationTimeout})
	if err != nil {
		if ectx.Err() == nil {
			log.Warn("MCP server: asking for an elicitation failed; answered cancel", "tool", c.tool.spec.Name, "error", err)
		}
		return cancelled, nil
	}
	switch ans.Action {
	case ElicitAccept:
		content := ans.Content
		if content == nil {
			content = map[string]any{}
		}
		return &mcp.ElicitResult{Action: ElicitAccept, Content: content}, nil
	case ElicitDecline:
		return declined, nil
	}
	return cancelled, nil
}

// errCallTimeout ends a call that ran longer than CallTimeout.
var errCallTimeout = errors.New("the call timed out")

// clock is a call's timeout that stops while a person is asked.
type clock struct {
	mu      sync.Mutex
	timer   *time.Timer
	left    time.Duration
	since   time.Time
	paused  int
	expired bool
}

func startClock(d time.Duration, expire func()) *clock {
	c := &clock{left: d, since: time.Now()}
	c.timer = time.AfterFunc(d, func() {
		c.mu.Lock()
		c.expired = true
		c.mu.Unlock()
		expire()
	})
	return c
}

func (c *clock) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused++; c.paused == 1 && c.timer.Stop() {
		c.left -= time.Since(c.since)
	}
}

func (c *clock) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused--; c.paused == 0 && !c.expired {
		c.since = time.Now()
		c.timer.Reset(max(c.left, 0))
	}
}

func (c *clock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expired = true
	c.timer.Stop()
}

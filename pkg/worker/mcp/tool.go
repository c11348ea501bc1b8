package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// Failure categories of MCP tool calls (tool.failed category), besides
// tools.TimedOut, tools.Cancelled and tools.InvalidArguments.
const (
	// Unavailable: the tool's server is not running (starting, or
	// restarting after it failed); the call was not sent.
	Unavailable = "mcp_server_unavailable"
	// ServerExited: the server went away during the call; it is being
	// restarted.
	ServerExited = "mcp_server_exited"
	// ProtocolError: the server answered the call with a JSON-RPC error
	// (an unknown tool, arguments it refused).
	ProtocolError = "mcp_error"
	// ToolError: the tool ran and reported an error (isError).
	ToolError = "tool_error"
)

// Prefix starts every MCP tool's name: mcp__<server>__<tool>.
const Prefix = "mcp__"

// MaxNameLen is the longest tool name offered: what model providers take.
const MaxNameLen = 64

// maxSchema is the largest input schema the tool inventory records.
const maxSchema = 65536

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// Tool is an MCP server's tool as a worker tool.
type Tool struct {
	s *server
	// remote is the tool's name on its server.
	remote string
	spec   tools.Spec
}

// newTool makes t a worker tool, or says why it cannot be offered. What a
// server lists is not trusted: names are reduced to the characters
// providers take, descriptions clipped, a schema that is not a JSON object
// replaced.
func newTool(s *server, t *mcp.Tool) (*Tool, string) {
	if t == nil || t.Name == "" {
		return nil, "a tool without a name"
	}
	name := Prefix + s.name + "__" + unsafeNameChars.ReplaceAllString(t.Name, "_")
	if len(name) > MaxNameLen {
		return nil, fmt.Sprintf("%q: its name %s is longer than %d characters", clipUTF8(t.Name, 80), clipUTF8(name, 80), MaxNameLen)
	}
	schema := []byte(`{"type":"object"}`)
	if t.InputSchema != nil {
		raw, err := json.Marshal(t.InputSchema)
		if err == nil && len(raw) > 0 && raw[0] == '{' {
			schema = raw
		}
	}
	if len(schema) > maxSchema {
		return nil, fmt.Sprintf("%q: its input schema is %d bytes; at most %d", clipUTF8(t.Name, 80), len(schema), maxSchema)
	}
	desc := t.Description
	if desc == "" && t.Title != "" {
		desc = t.Title
	}
	spec := tools.Spec{Name: name, Description: clipUTF8(desc, 4000), Schema: string(schema), Destructive: true, Interrupt: "cancel"}
	if a := t.Annotations; a != nil {
		// Hints of the server, recorded in the inventory; the permission
		// decision does not take them (Plan declares every call execute).
		spec.ReadOnly = a.ReadOnlyHint
		spec.Destructive = !a.ReadOnlyHint && (a.DestructiveHint == nil || *a.DestructiveHint)
	}
	return &Tool{s: s, remote: t.Name, spec: spec}, ""
}

// Spec implements tools.Tool.
func (t *Tool) Spec() tools.Spec { return t.spec }

// Server is the name of the tool's server.
func (t *Tool) Server() string { return t.s.name }

// Plan implements tools.Tool: the arguments must be a JSON object. What
// an MCP tool does is the server's business, so every call is declared
// execute: the permission service asks unless a rule names the tool
// (rules match the full name, e.g. mcp__everything__*).
func (t *Tool) Plan(_ *tools.Sandbox, args json.RawMessage) (tools.Access, error) {
	if _, err := object(args); err != nil {
		return tools.Access{}, err
	}
	return tools.Access{Access: eventsv1.Access_ACCESS_EXECUTE}, nil
}

// object checks that args is a JSON object ("" and null count as {}).
func object(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}"), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, &tools.Failure{Category: tools.InvalidArguments, Message: "the arguments must be a JSON object: " + err.Error()}
	}
	return trimmed, nil
}

// Run implements tools.Tool: the call goes to the server's running
// session, under ctx (and the manager's CallTimeout when ctx has no
// deadline); cancelling ctx cancels the call on the server. The server's
// elicitations during the call go to ctx's Elicitor (WithElicitor).
func (t *Tool) Run(ctx context.Context, _ *tools.Sandbox, args json.RawMessage) (tools.Result, error) {
	args, err := object(args)
	if err != nil {
		return tools.Result{}, err
	}
	sess, st := t.s.current()
	if sess == nil {
		msg := fmt.Sprintf("the MCP server %q is %s, so %s cannot be called now; it is restarted automatically, try again later", t.s.name, st.State, t.spec.Name)
		if st.LastError != "" {
			msg += " (last failure: " + st.LastError + ")"
		}
		return tools.Result{}, &tools.Failure{Category: Unavailable, Message: msg}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := &call{sess: sess, ctx: ctx, tool: t, elicit: elicitorOf(ctx)}
	if _, ok := ctx.Deadline(); !ok {
		// The call's timeout, stopped while a person is asked (elicit.go).
		c.clock = startClock(t.s.m.opts.CallTimeout, func() { cancel(errCallTimeout) })
		defer c.clock.stop()
	}
	defer t.s.track(c)()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		return tools.Result{}, t.failure(ctx, err)
	}
	out := render(res)
	if res.IsError {
		return tools.Result{}, &tools.Failure{Category: ToolError, Message: clipUTF8(out, 8000)}
	}
	r := tools.Result{Output: out, Bytes: len(out)}
	if max := t.s.m.opts.MaxOutput; len(out) > max {
		r.Output, r.Truncated = clipUTF8(out, max), true
	}
	return r, nil
}

// failure is a failed call's category and message.
func (t *Tool) failure(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(context.Cause(ctx), errCallTimeout):
		return &tools.Failure{Category: tools.TimedOut, Message: fmt.Sprintf("the MCP server %q did not answer %s in time; the call was cancelled", t.s.name, t.spec.Name)}
	case ctx.Err() != nil:
		return &tools.Failure{Category: tools.Cancelled, Message: "the call was cancelled"}
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return &tools.Failure{Category: ProtocolError, Message: fmt.Sprintf("the MCP server %q refused the call (JSON-RPC error %d): %s", t.s.name, we.Code, clipUTF8(we.Message, 2000))}
	}
	return &tools.Failure{Category: ServerExited, Message: fmt.Sprintf("the MCP server %q went away during the call (%s); it is being restarted and its tools are unavailable until it is back: try again later", t.s.name, clipUTF8(err.Error(), 500))}
}

// render is a result's content as text for the model: text as it is,
// other content described (images and audio by type and size, resources
// by URI), structured content as JSON when there is no other.
func render(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s %s]", c.URI, c.Name))
		case *mcp.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource %s %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			if raw, err := json.Marshal(c); err == nil {
				parts = append(parts, string(raw))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(raw))
		}
	}
	return strings.ToValidUTF8(strings.Join(parts, "\n"), "\uFFFD")
}

// clipUTF8 cuts s to at most n bytes on a character boundary.
func clipUTF8(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// sink is where a stream's items go: server-sent events (JSON-RPC and
// HTTP+JSON) or a gRPC stream.
type sink interface {
	send(item StreamResponse, cursor string) error
	keepalive() error
	// fail ends the stream with an error.
	fail(e *rpcError)
}

// sse writes a stream as server-sent events, each with its cursor as the
// event id: JSON-RPC responses (id is the request's), or the bare items
// of HTTP+JSON (rest).
type sse struct {
	w       http.ResponseWriter
	flush   *http.ResponseController
	id      json.RawMessage
	rest    bool
	started bool
}

func newSSE(w http.ResponseWriter, id json.RawMessage) *sse {
	return &sse{w: w, flush: http.NewResponseController(w), id: id}
}

func newRESTSSE(w http.ResponseWriter) *sse {
	return &sse{w: w, flush: http.NewResponseController(w), rest: true}
}

func (s *sse) begin() {
	if s.started {
		return
	}
	s.started = true
	s.w.Header().Set("Content-Type", "text/event-stream")
	s.w.Header().Set("Cache-Control", "no-cache")
	s.w.Header().Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

func (s *sse) send(item StreamResponse, eventID string) error {
	s.begin()
	var raw []byte
	var err error
	if s.rest {
		raw, err = json.Marshal(item)
	} else {
		raw, err = json.Marshal(rpcResponse{JSONRPC: "2.0", ID: s.id, Result: item})
	}
	if err != nil {
		return err
	}
	var b strings.Builder
	if eventID != "" {
		b.WriteString("id: " + eventID + "\n")
	}
	b.WriteString("data: ")
	b.Write(raw)
	b.WriteString("\n\n")
	if _, err := s.w.Write([]byte(b.String())); err != nil {
		return err
	}
	return s.flush.Flush()
}

// keepalive writes an SSE comment.
func (s *sse) keepalive() error {
	s.begin()
	if _, err := s.w.Write([]byte(": keepalive\n\n")); err != nil {
		return err
	}
	return s.flush.Flush()
}

// fail ends the stream with an error: a JSON-RPC error response when
// nothing was sent yet, else an error event.
func (s *sse) fail(e *rpcError) {
	if s.rest {
		if !s.started {
			writeREST(s.w, e)
			return
		}
		raw, _ := json.Marshal(restError(e))
		_, _ = fmt.Fprintf(s.w, "event: error\ndata: %s\n\n", raw)
		_ = s.flush.Flush()
		return
	}
	if !s.started {
		status := e.status
		if status == 0 {
			status = http.StatusOK
		}
		writeRPC(s.w, status, s.id, nil, e)
		return
	}
	raw, _ := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: s.id, Error: e})
	_, _ = fmt.Fprintf(s.w, "data: %s\n\n", raw)
	_ = s.flush.Flush()
}

// withCursor puts an item's cursor in its metadata (the cursor extension).
func withCursor(item StreamResponse, at cursor, evType string) StreamResponse {
	meta := map[string]any{"agentruntime": map[string]any{"cursor": at.String(), "sequence": at.seq, "eventType": evType}}
	switch {
	case item.StatusUpdate != nil:
		u := *item.StatusUpdate
		u.Metadata = meta
		item.StatusUpdate = &u
	case item.ArtifactUpdate != nil:
		u := *item.ArtifactUpdate
		u.Metadata = meta
		item.ArtifactUpdate = &u
	}
	return item
}

// sendStreaming serves SendStreamingMessage: the task first, then its
// status and artifact updates until it ends or waits for its client.
func (h *Handler) sendStreaming(ctx context.Context, out sink, p *SendMessageRequest) {
	st, err := h.startSend(ctx, p)
	if err != nil {
		out.fail(err)
		return
	}
	if st.after == nil {
		// A new task is announced first, as submitted.
		t := Task{ID: st.ref.turnID, ContextID: st.ref.contextID(), Status: TaskStatus{State: StateSubmitted}, History: []Message{st.user}}
		if err := out.send(StreamResponse{Task: &t}, ""); err != nil {
			return
		}
	}
	emit := func(item StreamResponse, at cursor, evType string) error {
		return out.send(withCursor(item, at, evType), at.String())
	}
	if _, err := h.follow(ctx, follow{ref: st.ref, from: st.from, after: st.after, emit: emit, until: untilWaits, keepalive: out.keepalive}); err != nil && ctx.Err() == nil {
		out.fail(err)
	}
}

// subscribe serves SubscribeToTask: the task as it is, then its updates
// until it ends or waits for its client. With a cursor (the extension),
// the items after it instead, a finished task's to its end.
func (h *Handler) subscribe(ctx context.Context, out sink, header func(string) string, p *TaskIDRequest) {
	if err := checkTaskID("params.id", p.ID); err != nil {
		out.fail(err)
		return
	}
	var after *cursor
	for _, hdr := range []string{CursorHeader, "Last-Event-ID"} {
		if v := header(hdr); v != "" {
			c, err := parseCursor(v)
			if err != nil {
				out.fail(invalidParams(hdr, "%v", err))
				return
			}
			after = &c
			break
		}
	}
	ref, err := h.locate(ctx, p.ID)
	if err != nil {
		out.fail(err)
		return
	}
	from, _, err := h.start(ctx, ref, 0)
	if err != nil {
		out.fail(err)
		return
	}
	emit := func(item StreamResponse, at cursor, evType string) error {
		return out.send(withCursor(item, at, evType), at.String())
	}
	if after != nil {
		if _, err := h.follow(ctx, follow{ref: ref, from: from, after: after, emit: emit, until: untilWaits, keepalive: out.keepalive}); err != nil && ctx.Err() == nil {
			out.fail(err)
		}
		return
	}
	// No cursor: the task as it is now, then what follows.
	var last *cursor
	track := func(_ StreamResponse, at cursor, _ string) error {
		last = &at
		return nil
	}
	v, err := h.follow(ctx, follow{ref: ref, from: from, emit: track, until: untilPresent})
	if err != nil {
		out.fail(err)
		return
	}
	t := v.snapshot()
	if last != nil {
		t.Metadata = map[string]any{"agentruntime": map[string]any{"cursor": last.String()}}
	}
	if err := out.send(StreamResponse{Task: &t}, cursorString(last)); err != nil || terminal(t.Status.State) || interrupted(t.Status.State) {
		return
	}
	if _, err := h.follow(ctx, follow{ref: ref, from: from, after: last, emit: emit, until: untilWaits, keepalive: out.keepalive}); err != nil && ctx.Err() == nil {
		out.fail(err)
	}
}

func cursorString(c *cursor) string {
	if c == nil {
		return ""
	}
	return c.String()
}

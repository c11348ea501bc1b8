// Tools beyond the built-in ones: a ToolSource (the worker's MCP servers,
// pkg/worker/mcp) whose tools come and go while the worker runs.

package worker

import (
	"context"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// ToolSource offers tools whose availability changes: a turn offers the
// model the tools available when it starts, and a call to one that went
// away meanwhile fails with the source's category. *mcp.Manager is one.
type ToolSource interface {
	// Tools are those that can be called now.
	Tools() []tools.Tool
	// Notices tell the model, a line each, about tools that cannot be
	// called now and why (a server restarting).
	Notices() []string
	// Facts describe the source's state; they are recorded with the tool
	// inventory (RegisterToolsRequest.facts).
	Facts() map[string]string
	// Changed is signalled when any of them changed: the worker registers
	// its tools again.
	Changed() <-chan struct{}
}

// toolSet is the tools a turn may call: the built-in ones and those the
// ToolSource has now (a built-in name is never shadowed).
func (w *Worker) toolSet() map[string]tools.Tool {
	if w.cfg.ToolSource == nil {
		return w.tools
	}
	set := make(map[string]tools.Tool, len(w.tools))
	for _, t := range w.cfg.ToolSource.Tools() {
		set[t.Spec().Name] = t
	}
	for n, t := range w.tools {
		set[n] = t
	}
	return set
}

// maxRegisteredTools is RegisterToolsRequest's bound on tools.
const maxRegisteredTools = 512

// toolNotices are the ToolSource's notices.
func (w *Worker) toolNotices() []string {
	if w.cfg.ToolSource == nil {
		return nil
	}
	return w.cfg.ToolSource.Notices()
}

// registerRequest is the worker's tool inventory now.
func (w *Worker) registerRequest() *controlv1.RegisterToolsRequest {
	req := &controlv1.RegisterToolsRequest{WorkerId: w.cfg.WorkerID, SessionId: w.cfg.SessionID}
	set := w.toolSet()
	// The built-in tools first: an inventory holds at most
	// maxRegisteredTools, and a ToolSource's beyond that are left out of it
	// (turns still offer them).
	for _, name := range toolNames(w.tools) {
		req.Tools = append(req.Tools, w.tools[name].Spec().ToolSpec())
	}
	left := 0
	for _, name := range toolNames(set) {
		if _, builtin := w.tools[name]; builtin {
			continue
		}
		if len(req.Tools) >= maxRegisteredTools {
			left++
			continue
		}
		req.Tools = append(req.Tools, set[name].Spec().ToolSpec())
	}
	if left > 0 {
		w.cfg.Logger.Warn("the tool inventory holds at most 512 tools; some are not registered", "left_out", left)
	}
	if w.cfg.ToolSource != nil {
		req.Facts = w.cfg.ToolSource.Facts()
	}
	return req
}

// followToolSource registers the inventory again whenever the ToolSource
// changes (a server started, failed, came back), retrying with a backoff:
// each registration is a snapshot.updated fact with the servers' states.
func (w *Worker) followToolSource(ctx context.Context) {
	if w.cfg.ToolSource == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.cfg.ToolSource.Changed():
		}
		for backoff := 200 * time.Millisecond; ; backoff = min(backoff*2, 5*time.Second) {
			err := w.RegisterTools(ctx)
			if err == nil || ctx.Err() != nil {
				break
			}
			w.cfg.Logger.WarnContext(ctx, "registering tools after a change", "error", err)
			if !sleep(ctx, backoff) {
				return
			}
		}
	}
}

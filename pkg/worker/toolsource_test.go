package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// source is a ToolSource whose tools the test sets.
type source struct {
	mu      sync.Mutex
	tools   []tools.Tool
	changed chan struct{}
}

func (s *source) Tools() []tools.Tool { s.mu.Lock(); defer s.mu.Unlock(); return s.tools }
func (s *source) Notices() []string   { return nil }
func (s *source) Facts() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]string{"mcp_server.many": fmt.Sprintf("running, %d tools", len(s.tools))}
}
func (s *source) Changed() <-chan struct{} { return s.changed }

type named string

func (n named) Spec() tools.Spec { return tools.Spec{Name: string(n), Schema: `{"type":"object"}`} }
func (named) Plan(*tools.Sandbox, json.RawMessage) (tools.Access, error) {
	return tools.Access{}, nil
}
func (named) Run(context.Context, *tools.Sandbox, json.RawMessage) (tools.Result, error) {
	return tools.Result{Output: "ok"}, nil
}

// A source with more tools than an inventory holds: the worker registers
// the built-in tools and as many of the source's as fit, so registration
// succeeds; a change of the source registers the inventory again.
func TestAToolSourceIsRegisteredWithinTheInventorysBound(t *testing.T) {
	rt := startRuntime(t)
	src := &source{changed: make(chan struct{}, 1)}
	for i := range 600 {
		src.tools = append(src.tools, named(fmt.Sprintf("mcp__many__t%03d", i)))
	}
	rt.startWorker(t, provider.NewScripted(provider.Script{Turns: []provider.ScriptTurn{{Steps: []provider.ScriptStep{{Text: "hi"}}}}}), workspace(t),
		func(c *worker.Config) { c.ToolSource = src })
	// count answers the inventory's size, how many of its tools are the
	// worker's own (not from the source), and whether read_file is one.
	count := func() (n, own int, builtin bool) {
		inv, err := rt.control.GetToolInventory(context.Background(), &controlv1.GetToolInventoryRequest{})
		if err != nil {
			return 0, 0, false
		}
		for _, s := range inv.GetTools() {
			builtin = builtin || s.GetName() == "read_file"
			if !strings.HasPrefix(s.GetName(), "mcp__") {
				own++
			}
		}
		return len(inv.GetTools()), own, builtin
	}
	builtins := 0
	testkit.Eventually(t, "the inventory holds 512 tools, read_file among them", func() bool {
		n, own, builtin := count()
		builtins = own
		return n == 512 && builtin
	})
	src.mu.Lock()
	src.tools = src.tools[:3]
	src.mu.Unlock()
	src.changed <- struct{}{}
	testkit.Eventually(t, "the inventory follows the source", func() bool {
		n, own, builtin := count()
		return n == builtins+3 && own == builtins && builtin
	})
}

package mcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/testkit/binproc"
	"github.com/agentruntime/agentruntime/pkg/worker/mcp"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// The mcpServers shape: stdio (the default type) and http servers, ${VAR}
// and ${VAR:-default} expanded from the worker's environment.
func TestParseConfigExpandsAndTypes(t *testing.T) {
	c, err := mcp.ParseConfig([]byte(`{"mcpServers": {
	  "everything": {"command": "npx", "args": ["-y", "pkg", "${ROOT:-/work}"], "env": {"TOKEN": "${TOKEN}"}},
	  "remote": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
	}}`), env(map[string]string{"TOKEN": "t0k", "HOST": "mcp.example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	e, r := c.Servers["everything"], c.Servers["remote"]
	if e.Type != mcp.TypeStdio || e.Args[2] != "/work" || e.Env["TOKEN"] != "t0k" {
		t.Fatalf("everything %+v", e)
	}
	if r.Type != mcp.TypeHTTP || r.URL != "https://mcp.example.com/mcp" || r.Headers["Authorization"] != "Bearer t0k" {
		t.Fatalf("remote %+v", r)
	}
	if strings.Join(c.Names(), ",") != "everything,remote" {
		t.Fatalf("names %v", c.Names())
	}
}

// A config that is not right is refused, the error naming the field.
func TestParseConfigRefusesNamingTheField(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{}`, "mcpServers: required"},
		{`{"mcpServers": {"a": {"command": "x"}}, "extra": 1}`, `unknown field "extra"`},
		{`{"mcpServers": {"a": {"command": "x", "cwd": "/"}}}`, `unknown field "cwd"`},
		{`{"mcpServers": {"bad__name": {"command": "x"}}}`, "mcpServers.bad__name"},
		{`{"mcpServers": {"a.b": {"command": "x"}}}`, "mcpServers.a.b: a server name"},
		{`{"mcpServers": {"a": {}}}`, "mcpServers.a.command: required"},
		{`{"mcpServers": {"a": {"type": "http", "url": "ftp://x"}}}`, "mcpServers.a.url"},
		{`{"mcpServers": {"a": {"type": "http", "url": "http://x", "command": "y"}}}`, "command, args and env are for a stdio server"},
		{`{"mcpServers": {"a": {"type": "sse", "url": "http://x"}}}`, "mcpServers.a.type: the deprecated SSE transport"},
		{`{"mcpServers": {"a": {"type": "ws"}}}`, `mcpServers.a.type: "ws"`},
		{`{"mcpServers": {"a": {"command": "x", "args": ["${NOPE}"]}}}`, "mcpServers.a: ${NOPE} is not set"},
		{`{"mcpServers": {"a": {"command": "x", "env": {"A=B": "c"}}}}`, "mcpServers.a.env"},
	} {
		_, err := mcp.ParseConfig([]byte(tc.raw), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.raw, err, tc.want)
		}
	}
}

// The example the docs point to parses.
func TestTheExampleConfigParses(t *testing.T) {
	root, err := binproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "examples", "mcp", "mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcp.ParseConfig(raw, env(nil))
	if err != nil || len(c.Servers) != 3 || c.Servers["remote"].Type != mcp.TypeHTTP {
		t.Fatalf("examples/mcp/mcp.json: %+v, %v", c, err)
	}
}

// Package mcp gives a worker the tools of MCP (Model Context Protocol)
// servers: it starts and supervises the servers a config file names (stdio
// commands or streamable HTTP endpoints), lists their tools and offers each
// as a worker tool named mcp__<server>__<tool>, which the worker runs like
// any tool (permission first, then the call, its result or failure as
// facts). A server that dies is restarted with a backoff; its tools are
// unavailable meanwhile. Built on github.com/modelcontextprotocol/go-sdk.
package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Config is an MCP config file in the mcpServers shape of Claude Code's
// .mcp.json:
//
//	{"mcpServers": {
//	  "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {"K": "v"}},
//	  "remote":     {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
//	}}
//
// ${VAR} and ${VAR:-default} in command, args, env values, url and header
// values are expanded from the worker's environment when the file is read.
type Config struct {
	Servers map[string]ServerConfig `json:"mcpServers"`
}

// ServerConfig is one server: a command (type "stdio", the default) or an
// endpoint (type "http").
type ServerConfig struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Transport types.
const (
	TypeStdio = "stdio"
	TypeHTTP  = "http"
)

// serverName: a server's name is part of its tools' names
// (mcp__<name>__<tool>), which providers limit to [A-Za-z0-9_-]; a double
// underscore would make the name ambiguous.
var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

func validServerName(n string) bool {
	return serverName.MatchString(n) && !strings.Contains(n, "__") && !strings.HasSuffix(n, "_")
}

// MaxServers bounds how many servers one config starts.
const MaxServers = 32

// LoadConfig reads and checks a config file.
func LoadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return ParseConfig(raw, os.LookupEnv)
}

// ParseConfig parses a config strictly (an unknown key is an error, so a
// typo does not silently drop a setting), expands ${VAR} references with
// lookup and checks every server. Errors name the field.
func ParseConfig(raw []byte, lookup func(string) (string, bool)) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("mcp config: %w", err)
	}
	if c.Servers == nil {
		return Config{}, fmt.Errorf("mcp config: mcpServers: required (an object of servers by name)")
	}
	if len(c.Servers) > MaxServers {
		return Config{}, fmt.Errorf("mcp config: mcpServers: %d servers; at most %d", len(c.Servers), MaxServers)
	}
	for _, name := range c.Names() {
		s := c.Servers[name]
		field := "mcpServers." + name
		if !validServerName(name) {
			return Config{}, fmt.Errorf("mcp config: %s: a server name is 1 to 32 letters, digits, '-' or single '_' (it is part of its tools' names, mcp__<server>__<tool>)", field)
		}
		x := expander{lookup: lookup}
		s.Command, s.URL = x.expand(s.Command), x.expand(s.URL)
		for i := range s.Args {
			s.Args[i] = x.expand(s.Args[i])
		}
		for k, v := range s.Env {
			s.Env[k] = x.expand(v)
		}
		for k, v := range s.Headers {
			s.Headers[k] = x.expand(v)
		}
		if x.missing != "" {
			return Config{}, fmt.Errorf("mcp config: %s: ${%s} is not set in the worker's environment (write ${%s:-default} for a default)", field, x.missing, x.missing)
		}
		switch s.Type {
		case "", TypeStdio:
			s.Type = TypeStdio
			if s.Command == "" {
				return Config{}, fmt.Errorf("mcp config: %s.command: required for a stdio server", field)
			}
			if s.URL != "" || len(s.Headers) > 0 {
				return Config{}, fmt.Errorf("mcp config: %s: url and headers are for an http server (\"type\": \"http\")", field)
			}
		case TypeHTTP, "streamable-http", "streamableHttp":
			s.Type = TypeHTTP
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return Config{}, fmt.Errorf("mcp config: %s.url: an http:// or https:// URL is required for an http server (got %q)", field, s.URL)
			}
			if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
				return Config{}, fmt.Errorf("mcp config: %s: command, args and env are for a stdio server", field)
			}
		case "sse":
			return Config{}, fmt.Errorf("mcp config: %s.type: the deprecated SSE transport is not supported; use \"http\" (streamable HTTP)", field)
		default:
			return Config{}, fmt.Errorf("mcp config: %s.type: %q is not a transport; \"stdio\" or \"http\"", field, s.Type)
		}
		for k := range s.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return Config{}, fmt.Errorf("mcp config: %s.env: %q is not a variable name", field, k)
			}
		}
		c.Servers[name] = s
	}
	return c, nil
}

// Names are the servers' names, sorted.
func (c Config) Names() []string {
	out := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expander expands ${VAR} and ${VAR:-default}; the first unset variable
// without a default is kept in missing.
type expander struct {
	lookup  func(string) (string, bool)
	missing string
}

func (x *expander) expand(s string) string {
	return envRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := envRef.FindStringSubmatch(ref)
		if v, ok := x.lookup(m[1]); ok {
			return v
		}
		if m[2] != "" {
			return m[3]
		}
		if x.missing == "" {
			x.missing = m[1]
		}
		return ""
	})
}

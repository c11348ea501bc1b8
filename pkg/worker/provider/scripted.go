package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentruntime/agentruntime/pkg/ids"
)

// Script is a scripted provider's file: model turns, each a list of
// steps (one step per model call). YAML or JSON.
//
//	model: scripted
//	turns:
//	  - match: "notes"          # substring of the user's message; "" matches any
//	    tool: browser_time      # optional: plays only when the call offers this tool
//	    steps:
//	      - text: "Reading it."
//	        tool_calls: [{name: read_file, arguments: {path: README.md}}]
//	        usage: {input_tokens: 120, output_tokens: 12}
//	      - text: "Done."
type Script struct {
	Model string       `yaml:"model" json:"model"`
	Turns []ScriptTurn `yaml:"turns" json:"turns"`
}

// ScriptTurn is the steps of one turn.
type ScriptTurn struct {
	Match string `yaml:"match" json:"match"`
	// Tool, when set, is a tool the model call must offer for the turn to
	// play (a client tool a front end may or may not send).
	Tool  string       `yaml:"tool" json:"tool"`
	Steps []ScriptStep `yaml:"steps" json:"steps"`
}

// ScriptStep is one model call's answer.
type ScriptStep struct {
	Reasoning  string           `yaml:"reasoning" json:"reasoning"`
	Text       string           `yaml:"text" json:"text"`
	ToolCalls  []ScriptToolCall `yaml:"tool_calls" json:"tool_calls"`
	StopReason string           `yaml:"stop_reason" json:"stop_reason"`
	Usage      *ScriptUsage     `yaml:"usage" json:"usage"`
	// Error makes the call fail with this category (e.g. rate_limited).
	Error string `yaml:"error" json:"error"`
}

// ScriptToolCall is a call; Arguments is any YAML value, sent as JSON.
type ScriptToolCall struct {
	Name      string `yaml:"name" json:"name"`
	Arguments any    `yaml:"arguments" json:"arguments"`
}

// ScriptUsage is a step's token usage.
type ScriptUsage struct {
	InputTokens  int64 `yaml:"input_tokens" json:"input_tokens"`
	OutputTokens int64 `yaml:"output_tokens" json:"output_tokens"`
}

// Scripted answers model calls from a Script: deterministic, no network.
// The step is the number of assistant messages since the last user
// message, so a retried or resumed turn replays the same answers.
type Scripted struct {
	script Script
}

// LoadScript reads a script file (YAML or JSON).
func LoadScript(path string) (Script, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Script{}, err
	}
	return ParseScript(raw)
}

// ParseScript parses a script strictly: unknown keys are errors, so a
// typo does not silently change the demo.
func ParseScript(raw []byte) (Script, error) {
	var s Script
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("script: %w", err)
	}
	if len(s.Turns) == 0 {
		return Script{}, fmt.Errorf("script: no turns")
	}
	for i, t := range s.Turns {
		if len(t.Steps) == 0 {
			return Script{}, fmt.Errorf("script: turns[%d] has no steps", i)
		}
		for j, st := range t.Steps {
			for k, c := range st.ToolCalls {
				if c.Name == "" {
					return Script{}, fmt.Errorf("script: turns[%d].steps[%d].tool_calls[%d]: name required", i, j, k)
				}
				if _, err := argsJSON(c.Arguments); err != nil {
					return Script{}, fmt.Errorf("script: turns[%d].steps[%d].tool_calls[%d].arguments: %w", i, j, k, err)
				}
			}
		}
	}
	if s.Model == "" {
		s.Model = "scripted"
	}
	return s, nil
}

// NewScripted returns a provider playing s.
func NewScripted(s Script) *Scripted { return &Scripted{script: s} }

// Name implements Provider.
func (*Scripted) Name() string { return "scripted" }

// Model is the model id the script reports.
func (p *Scripted) Model() string { return p.script.Model }

func argsJSON(v any) (string, error) {
	if v == nil {
		return "{}", nil
	}
	if s, ok := v.(string); ok {
		if !json.Valid([]byte(s)) {
			return "", fmt.Errorf("not JSON: %q", s)
		}
		return s, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// Stream implements Provider.
func (p *Scripted) Stream(ctx context.Context, req Request, sink Sink) (Response, error) {
	lastUser, step := "", 0
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			lastUser, step = m.Content, 0
		case "assistant":
			step += max(1, m.Summarizes)
		}
	}
	turn := p.pick(lastUser, req.Tools)
	if step >= len(turn.Steps) {
		return Response{}, &Error{Category: ScriptEnded, Message: fmt.Sprintf("the script has %d steps for this turn; step %d was asked for", len(turn.Steps), step+1)}
	}
	st := turn.Steps[step]
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	if st.Error != "" {
		return Response{}, &Error{Category: st.Error, Message: "scripted failure"}
	}
	if st.Reasoning != "" {
		sink.Reasoning(st.Reasoning)
	}
	for _, w := range chunks(st.Text) {
		sink.Text(w)
	}
	resp := Response{Text: st.Text, StopReason: st.StopReason}
	for i, c := range st.ToolCalls {
		args, _ := argsJSON(c.Arguments)
		id := ids.New(ids.ToolCall)
		sink.ToolCall(i, id, c.Name)
		// Two chunks, as real streams split arguments.
		half := len(args) / 2
		sink.ToolArgs(i, args[:half])
		sink.ToolArgs(i, args[half:])
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: id, Name: c.Name, Arguments: args})
	}
	if resp.StopReason == "" {
		resp.StopReason = "end_turn"
		if len(resp.ToolCalls) > 0 {
			resp.StopReason = "tool_use"
		}
	}
	if st.Usage != nil {
		resp.Usage = Usage{InputTokens: st.Usage.InputTokens, OutputTokens: st.Usage.OutputTokens}
		resp.UsageKnown = true
	}
	return resp, nil
}

func (p *Scripted) pick(user string, offered []Tool) ScriptTurn {
	lower := strings.ToLower(user)
	plays := func(t ScriptTurn) bool {
		return t.Tool == "" || slices.ContainsFunc(offered, func(o Tool) bool { return o.Name == t.Tool })
	}
	for _, t := range p.script.Turns {
		if t.Match != "" && strings.Contains(lower, strings.ToLower(t.Match)) && plays(t) {
			return t
		}
	}
	for _, t := range p.script.Turns {
		if t.Match == "" && plays(t) {
			return t
		}
	}
	return p.script.Turns[0]
}

// chunks splits text after each space, the way streams deliver words.
func chunks(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

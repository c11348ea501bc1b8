// Package clienttool is the contract of client-side tools: tools the
// submitter of a turn offers (an AG-UI front end's RunAgentInput.tools,
// pkg/agui) and runs itself. They ride with the turn as the SubmitTurn
// option Option (a JSON array of Tool); the worker offers them to the
// model beside its own tools, and a call to one is not run by the runtime:
// the worker opens an action of type ActionType carrying the call and
// hands the turn back (pkg/worker/park.go) until the action is answered
// with decision Decision and the tool's result as the payload (a JSON
// string, PayloadSchema).
package clienttool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
)

const (
	// Option is the SubmitTurn option that carries a turn's client tools.
	Option = "client_tools"
	// ActionType is the type of the action a call to a client tool opens.
	ActionType = "client_tool"
	// Decision is the one decision such an action offers: the call's
	// result is in the payload.
	Decision = "result"
	// PayloadSchema is what the answer's payload must be: the tool's
	// result as a JSON string.
	PayloadSchema = `{"type":"string"}`
	// MaxTools is how many client tools a turn may offer.
	MaxTools = 64
)

// Context keys of the action a call opens (ActionRequired.context).
const (
	ContextTool      = "tool_name"
	ContextArguments = "arguments"
)

// Tool is one client tool, in AG-UI's shape.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the call's arguments (an object
	// schema); empty means any object.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// The names model APIs take for a function (OpenAI's and Anthropic's rule).
var name = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Violation is a mistake in a tool list: Field is relative to the list
// ("[2].name").
type Violation struct {
	Field, Message string
}

func (v *Violation) Error() string { return v.Field + ": " + v.Message }

// Check checks a tool list: at most MaxTools, each with a unique name
// models take, parameters (when given) a JSON object.
func Check(ts []Tool) error {
	if len(ts) > MaxTools {
		return &Violation{Field: "", Message: fmt.Sprintf("%d tools; at most %d", len(ts), MaxTools)}
	}
	seen := map[string]bool{}
	for i, t := range ts {
		at := "[" + strconv.Itoa(i) + "]"
		switch {
		case !name.MatchString(t.Name):
			return &Violation{Field: at + ".name", Message: fmt.Sprintf("%q is not a tool name (1 to 64 letters, digits, _ or -)", t.Name)}
		case seen[t.Name]:
			return &Violation{Field: at + ".name", Message: fmt.Sprintf("%q is offered twice", t.Name)}
		case len(t.Parameters) > 0 && !isObject(t.Parameters):
			return &Violation{Field: at + ".parameters", Message: "not a JSON Schema object"}
		}
		seen[t.Name] = true
	}
	return nil
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// ActionID is the id of the action a call opens, derived from the call's
// id: a front end answering the call by its id finds the action, and the
// same call asking again is the same action. The call id is a runtime id
// (pkg/worker: letters, digits, _ and -, at most 128); a longer one is
// hashed to fit.
func ActionID(callID string) string {
	id := "ct_" + callID
	if len(id) > 128 {
		sum := sha256.Sum256([]byte(callID))
		id = "ct_" + hex.EncodeToString(sum[:])
	}
	return id
}

// Parse reads and checks the option's value.
func Parse(raw string) ([]Tool, error) {
	var ts []Tool
	if err := json.Unmarshal([]byte(raw), &ts); err != nil {
		return nil, &Violation{Message: "not a JSON array of tools ({name, description, parameters}): " + err.Error()}
	}
	return ts, Check(ts)
}

// Encode is the option's value for ts.
func Encode(ts []Tool) (string, error) {
	b, err := json.Marshal(ts)
	return string(b), err
}

// Schema is the tool's parameters as the model is given them.
func (t Tool) Schema() string {
	if len(t.Parameters) == 0 {
		return `{"type":"object"}`
	}
	return string(t.Parameters)
}

// Result is the tool's result text in an answer's payload (a JSON string;
// any other JSON is its text).
func Result(payload string) string {
	var s string
	if json.Unmarshal([]byte(payload), &s) == nil {
		return s
	}
	return payload
}

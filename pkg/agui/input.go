package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentruntime/agentruntime/pkg/clienttool"
)

// maxBody bounds a RunAgentInput: the 1.0 client sends the whole message
// history on every run, so it is larger than an API request, but a caller
// still cannot make the server buffer more than this.
const maxBody = 4 << 20

// DefaultSession is the session of a run whose forwardedProps name none.
const DefaultSession = "default"

// idPattern is the runtime's id rule (the API's protovalidate patterns).
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

const maxIDLen = 128

// runInput is what this handler reads of an AG-UI RunAgentInput; unknown
// members are ignored, as the protocol's objects are open.
type runInput struct {
	ThreadID       string            `json:"threadId"`
	RunID          string            `json:"runId"`
	Messages       []message         `json:"messages"`
	Tools          []clienttool.Tool `json:"tools"`
	ForwardedProps json.RawMessage   `json:"forwardedProps"`
	Resume         []resumeEntry     `json:"resume"`
}

type message struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// ToolCallID: a tool message's call (the result of a front-end tool).
	ToolCallID string `json:"toolCallId"`
}

type resumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

// forwarded is what the handler reads of forwardedProps.
type forwarded struct {
	SessionID    string `json:"sessionId"`
	Agentruntime struct {
		// Cursor resumes a cut stream after the event that carried it
		// (the reconnect extension, docs/ag-ui.md).
		Cursor string `json:"cursor"`
	} `json:"agentruntime"`
}

// run is a validated request.
type run struct {
	threadID, runID, sessionID string
	// userText and userMessageID: the newest user message, the turn's
	// input (empty on a resume or a reconnect).
	userText, userMessageID string
	// tools are the front end's tools, offered to the model with the
	// turn (clienttool.Option).
	tools  []clienttool.Tool
	resume []answer
	cursor *cursor
	// cursorField is where the cursor came from, for errors.
	cursorField string
}

// answer is one resume entry, or a tool message answering a front-end
// tool's call: the action it answers and how.
type answer struct {
	// field is where it is in the request; idField names what names the
	// action (resume[i].interruptId, messages[i].toolCallId).
	field, idField string
	actionID       string
	cancelled      bool
	// decision is empty when cancelled, or when the payload named none.
	decision    string
	payloadJSON string
}

// inputError is a caller's mistake in the request, naming the field.
type inputError struct {
	field, message string
}

func (e *inputError) Error() string { return e.field + ": " + e.message }

func invalid(field, format string, args ...any) error {
	return &inputError{field: field, message: fmt.Sprintf(format, args...)}
}

// parseRun reads and validates a RunAgentInput. lastEventID is the
// request's Last-Event-ID header, the other spelling of the cursor.
func parseRun(body io.Reader, lastEventID string) (*run, error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	var in runInput
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&in); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return nil, invalid(typeErr.Field, "must be a JSON %s", typeErr.Type.Kind())
		}
		return nil, invalid("body", "not a RunAgentInput JSON object: %v", err)
	}
	r := &run{threadID: in.ThreadID, runID: in.RunID, sessionID: DefaultSession, tools: in.Tools}
	if err := clienttool.Check(in.Tools); err != nil {
		var v *clienttool.Violation
		errors.As(err, &v)
		return nil, invalid("tools"+v.Field, "%s", v.Message)
	}
	if err := checkID("threadId", in.ThreadID); err != nil {
		return nil, err
	}
	if in.RunID == "" {
		return nil, invalid("runId", "required")
	}
	if len(in.RunID) > 256 {
		return nil, invalid("runId", "longer than 256 characters")
	}
	if len(in.ForwardedProps) > 0 && string(in.ForwardedProps) != "null" {
		var fp forwarded
		if err := json.Unmarshal(in.ForwardedProps, &fp); err != nil {
			return nil, invalid("forwardedProps", "must be an object with a string sessionId: %v", err)
		}
		if fp.SessionID != "" {
			if err := checkID("forwardedProps.sessionId", fp.SessionID); err != nil {
				return nil, err
			}
			r.sessionID = fp.SessionID
		}
		if fp.Agentruntime.Cursor != "" {
			c, err := parseCursor(fp.Agentruntime.Cursor)
			if err != nil {
				return nil, invalid("forwardedProps.agentruntime.cursor", "%v", err)
			}
			r.cursor, r.cursorField = c, "forwardedProps.agentruntime.cursor"
		}
	}
	if r.cursor == nil && lastEventID != "" {
		c, err := parseCursor(lastEventID)
		if err != nil {
			return nil, invalid("Last-Event-ID", "%v", err)
		}
		r.cursor, r.cursorField = c, "Last-Event-ID"
	}
	for i, e := range in.Resume {
		a, err := parseAnswer(fmt.Sprintf("resume[%d]", i), e)
		if err != nil {
			return nil, err
		}
		r.resume = append(r.resume, a)
	}
	if len(r.resume) > 0 && r.cursor != nil {
		return nil, invalid("resume", "a run resumes an interrupt or reconnects by cursor, not both")
	}
	if len(r.resume) > 0 || r.cursor != nil {
		return r, nil
	}
	// Tool messages after everything else answer front-end tools' calls:
	// the run resumes the turn that waits for them.
	for i := len(in.Messages) - 1; i >= 0 && in.Messages[i].Role == "tool"; i-- {
		a, err := toolAnswer(fmt.Sprintf("messages[%d]", i), in.Messages[i])
		if err != nil {
			return nil, err
		}
		r.resume = append([]answer{a}, r.resume...)
	}
	if len(r.resume) > 0 {
		return r, nil
	}
	for i := len(in.Messages) - 1; i >= 0; i-- {
		m := in.Messages[i]
		if m.Role != "user" {
			continue
		}
		field := fmt.Sprintf("messages[%d]", i)
		if m.ID == "" {
			return nil, invalid(field+".id", "required")
		}
		if len(m.ID) > 200 {
			return nil, invalid(field+".id", "longer than 200 characters")
		}
		text, err := userText(field+".content", m.Content)
		if err != nil {
			return nil, err
		}
		r.userText, r.userMessageID = text, m.ID
		return r, nil
	}
	return nil, invalid("messages", "no user message: the newest user message is the turn's input")
}

// userText is a user message's text: a string, or the text parts of an
// array of parts (other parts are refused: the runtime takes text input).
func userText(field string, content json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(content, &s); err == nil {
		if strings.TrimSpace(s) == "" {
			return "", invalid(field, "empty")
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(content, &parts); err != nil {
		return "", invalid(field, "must be a string or an array of content parts")
	}
	var texts []string
	for i, p := range parts {
		if p.Type != "text" {
			return "", invalid(fmt.Sprintf("%s[%d].type", field, i), "%q parts are not accepted; only text", p.Type)
		}
		texts = append(texts, p.Text)
	}
	text := strings.Join(texts, "\n")
	if strings.TrimSpace(text) == "" {
		return "", invalid(field, "empty")
	}
	return text, nil
}

// toolAnswer reads a tool message: the result of the front-end tool call
// it names, the payload of that call's action (clienttool.ActionID).
func toolAnswer(field string, m message) (answer, error) {
	if err := checkID(field+".toolCallId", m.ToolCallID); err != nil {
		return answer{}, err
	}
	var content string
	if err := json.Unmarshal(m.Content, &content); err != nil {
		return answer{}, invalid(field+".content", "must be a string: the tool's result")
	}
	payload, _ := json.Marshal(content)
	return answer{field: field, idField: field + ".toolCallId", actionID: clienttool.ActionID(m.ToolCallID),
		decision: clienttool.Decision, payloadJSON: string(payload)}, nil
}

// parseAnswer reads a resume entry. The interrupt id is the runtime action
// id; the payload is the decision as a string, or an object with a
// decision and an optional payload (the action's structured response).
func parseAnswer(field string, e resumeEntry) (answer, error) {
	if err := checkID(field+".interruptId", e.InterruptID); err != nil {
		return answer{}, err
	}
	a := answer{field: field, idField: field + ".interruptId", actionID: e.InterruptID}
	switch e.Status {
	case "cancelled":
		a.cancelled = true
		return a, nil
	case "resolved":
	default:
		return answer{}, invalid(field+".status", "must be resolved or cancelled, not %q", e.Status)
	}
	if len(e.Payload) == 0 || string(e.Payload) == "null" {
		return answer{}, invalid(field+".payload", "required: the decision (one the interrupt offers), or {decision, payload}")
	}
	var decision string
	if err := json.Unmarshal(e.Payload, &decision); err == nil {
		a.decision = decision
	} else {
		var obj struct {
			Decision string          `json:"decision"`
			Payload  json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(e.Payload, &obj); err != nil {
			return answer{}, invalid(field+".payload", "must be a decision string or an object {decision, payload}")
		}
		a.decision = obj.Decision
		if len(obj.Payload) > 0 && string(obj.Payload) != "null" {
			a.payloadJSON = string(obj.Payload)
		}
	}
	if a.decision == "" {
		return answer{}, invalid(field+".payload.decision", "required")
	}
	return a, nil
}

func checkID(field, v string) error {
	switch {
	case v == "":
		return invalid(field, "required")
	case len(v) > maxIDLen:
		return invalid(field, "longer than %d characters", maxIDLen)
	case !idPattern.MatchString(v):
		return invalid(field, "%q is not a runtime id (letters, digits, _ and -, starting with a letter or digit)", v)
	}
	return nil
}

// cursor says where a run's stream was: the turn, the sequence its
// subscription started at, and the last event delivered (the k-th AG-UI
// event made of the runtime event at seq). Clients keep it opaque.
type cursor struct {
	turnID    string
	from, seq uint64
	k         int
}

func (c cursor) String() string {
	return fmt.Sprintf("%s.%d.%d.%d", c.turnID, c.from, c.seq, c.k)
}

func parseCursor(s string) (*cursor, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 || checkID("turn", parts[0]) != nil {
		return nil, errors.New("not a cursor this server issued")
	}
	from, err1 := strconv.ParseUint(parts[1], 10, 64)
	seq, err2 := strconv.ParseUint(parts[2], 10, 64)
	k, err3 := strconv.Atoi(parts[3])
	if err1 != nil || err2 != nil || err3 != nil || from == 0 || seq+1 < from || k < 0 {
		return nil, errors.New("not a cursor this server issued")
	}
	return &cursor{turnID: parts[0], from: from, seq: seq, k: k}, nil
}

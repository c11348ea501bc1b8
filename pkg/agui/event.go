package agui

import "encoding/json"

// AG-UI event types (the protocol's EventType names) this handler sends.
const (
	RunStarted              = "RUN_STARTED"
	RunFinished             = "RUN_FINISHED"
	RunError                = "RUN_ERROR"
	StepStarted             = "STEP_STARTED"
	StepFinished            = "STEP_FINISHED"
	TextMessageStart        = "TEXT_MESSAGE_START"
	TextMessageContent      = "TEXT_MESSAGE_CONTENT"
	TextMessageEnd          = "TEXT_MESSAGE_END"
	ReasoningStart          = "REASONING_START"
	ReasoningMessageStart   = "REASONING_MESSAGE_START"
	ReasoningMessageContent = "REASONING_MESSAGE_CONTENT"
	ReasoningMessageEnd     = "REASONING_MESSAGE_END"
	ReasoningEnd            = "REASONING_END"
	ToolCallStart           = "TOOL_CALL_START"
	ToolCallArgs            = "TOOL_CALL_ARGS"
	ToolCallEnd             = "TOOL_CALL_END"
	ToolCallResult          = "TOOL_CALL_RESULT"
	StateSnapshot           = "STATE_SNAPSHOT"
	StateDelta              = "STATE_DELTA"
	Custom                  = "CUSTOM"
)

// Event is one AG-UI event: the members of every type, each set only for
// the types that carry it (the JSON shapes of the AG-UI 1.0 schema).
type Event struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	// Metadata carries the runtime's ids and the cursor under
	// "agentruntime" (meta).
	Metadata map[string]any `json:"metadata,omitempty"`

	ThreadID string `json:"threadId,omitempty"`
	RunID    string `json:"runId,omitempty"`

	MessageID       string `json:"messageId,omitempty"`
	Role            string `json:"role,omitempty"`
	ToolCallID      string `json:"toolCallId,omitempty"`
	ToolCallName    string `json:"toolCallName,omitempty"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
	StepName        string `json:"stepName,omitempty"`
	// Delta is a text fragment (TEXT_MESSAGE_CONTENT, TOOL_CALL_ARGS,
	// REASONING_MESSAGE_CONTENT) or a JSON Patch (STATE_DELTA).
	Delta any `json:"delta,omitempty"`
	// Content is TOOL_CALL_RESULT's, which may be the empty string.
	Content *string `json:"content,omitempty"`

	Snapshot any `json:"snapshot,omitempty"`

	Result  any      `json:"result,omitempty"`
	Outcome *Outcome `json:"outcome,omitempty"`

	Message string `json:"message,omitempty"`
	Code    string `json:"code,omitempty"`

	Name  string `json:"name,omitempty"`
	Value any    `json:"value,omitempty"`
}

// Outcome is RUN_FINISHED's: success, interrupt or cancelled.
type Outcome struct {
	Type               string      `json:"type"`
	PendingToolCallIDs []string    `json:"pendingToolCallIds,omitempty"`
	Interrupts         []Interrupt `json:"interrupts,omitempty"`
}

// Interrupt is a pending runtime action as AG-UI's interrupt: its id is
// the action id a resume answers.
type Interrupt struct {
	ID             string         `json:"id"`
	Reason         string         `json:"reason"`
	Message        string         `json:"message,omitempty"`
	ToolCallID     string         `json:"toolCallId,omitempty"`
	ResponseSchema map[string]any `json:"responseSchema,omitempty"`
	ExpiresAt      string         `json:"expiresAt,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
}

// PatchOp is one RFC 6902 operation of a STATE_DELTA.
type PatchOp struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	// Value is raw JSON, so a false, 0 or "" is still sent.
	Value json.RawMessage `json:"value,omitempty"`
}

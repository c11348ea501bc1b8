package a2a

import "encoding/json"

// The A2A 1.0 objects this server reads and writes, in the ProtoJSON form
// of the protocol's lf.a2a.v1 messages (camelCase members, enums as their
// names). Only the members the server uses are declared; unknown members
// of a request are ignored, as the protocol's objects are open
// (docs/adr/0015-a2a-by-hand.md says why these are written here).

// Task states.
const (
	StateSubmitted     = "TASK_STATE_SUBMITTED"
	StateWorking       = "TASK_STATE_WORKING"
	StateInputRequired = "TASK_STATE_INPUT_REQUIRED"
	StateCompleted     = "TASK_STATE_COMPLETED"
	StateFailed        = "TASK_STATE_FAILED"
	StateCanceled      = "TASK_STATE_CANCELED"
)

// terminal says whether a task in state s can change no more.
func terminal(s string) bool {
	return s == StateCompleted || s == StateFailed || s == StateCanceled
}

// interrupted says whether a task in state s waits for its client: a
// blocking send and a stream end there.
func interrupted(s string) bool { return s == StateInputRequired }

// Roles.
const (
	RoleUser  = "ROLE_USER"
	RoleAgent = "ROLE_AGENT"
)

// Part is one piece of a message or artifact: text or a JSON value.
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	Raw       string          `json:"raw,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

// TextPart is a text part.
func TextPart(s string) Part { return Part{Text: &s} }

// Message is a turn of the conversation, the user's or the agent's.
type Message struct {
	MessageID string         `json:"messageId"`
	ContextID string         `json:"contextId,omitempty"`
	TaskID    string         `json:"taskId,omitempty"`
	Role      string         `json:"role"`
	Parts     []Part         `json:"parts"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskStatus is where a task is.
type TaskStatus struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID string         `json:"artifactId"`
	Name       string         `json:"name,omitempty"`
	Parts      []Part         `json:"parts"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Task is a turn, as A2A sees it.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskStatusUpdateEvent is a streamed change of a task's status.
type TaskStatusUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskArtifactUpdateEvent is a streamed artifact.
type TaskArtifactUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  Artifact       `json:"artifact"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// StreamResponse is one item of a stream: exactly one member is set.
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	Message        *Message                 `json:"message,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}

// SendMessageRequest is SendMessage's and SendStreamingMessage's params.
type SendMessageRequest struct {
	Tenant        string                    `json:"tenant"`
	Message       *Message                  `json:"message"`
	Configuration *SendMessageConfiguration `json:"configuration"`
	Metadata      map[string]any            `json:"metadata"`
}

// SendMessageConfiguration is what the server reads of a send's options.
type SendMessageConfiguration struct {
	HistoryLength     *int `json:"historyLength"`
	ReturnImmediately bool `json:"returnImmediately"`
	// Blocking false is the A2A 0.3 spelling of returnImmediately.
	Blocking *bool `json:"blocking"`
	// A push notification config for the task (its taskId is the task's);
	// pushNotificationConfig is the A2A 0.3 spelling.
	TaskPushNotificationConfig *TaskPushNotificationConfig `json:"taskPushNotificationConfig"`
	PushNotificationConfig     *TaskPushNotificationConfig `json:"pushNotificationConfig"`
}

// TaskIDRequest is GetTask's, CancelTask's and SubscribeToTask's params.
type TaskIDRequest struct {
	Tenant        string `json:"tenant"`
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength"`
}

// ListTasksRequest is ListTasks' params.
type ListTasksRequest struct {
	Tenant           string `json:"tenant"`
	ContextID        string `json:"contextId"`
	Status           string `json:"status"`
	PageSize         int    `json:"pageSize"`
	PageToken        string `json:"pageToken"`
	IncludeArtifacts bool   `json:"includeArtifacts"`
}

// ListTasksResponse is ListTasks' result.
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

// AgentCard describes the agent at /.well-known/agent-card.json.
type AgentCard struct {
	Name                 string            `json:"name"`
	Description          string            `json:"description"`
	SupportedInterfaces  []AgentInterface  `json:"supportedInterfaces"`
	Provider             *AgentProvider    `json:"provider,omitempty"`
	Version              string            `json:"version"`
	DocumentationURL     string            `json:"documentationUrl,omitempty"`
	Capabilities         AgentCapabilities `json:"capabilities"`
	SecuritySchemes      map[string]any    `json:"securitySchemes,omitempty"`
	SecurityRequirements []map[string]any  `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string          `json:"defaultInputModes"`
	DefaultOutputModes   []string          `json:"defaultOutputModes"`
	Skills               []AgentSkill      `json:"skills"`
}

// AgentInterface is one binding the agent is reached through.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
	Tenant          string `json:"tenant,omitempty"`
}

// AgentProvider names who runs the agent.
type AgentProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

// AgentCapabilities says what the agent supports beyond the core.
type AgentCapabilities struct {
	Streaming         bool             `json:"streaming"`
	PushNotifications bool             `json:"pushNotifications"`
	Extensions        []AgentExtension `json:"extensions,omitempty"`
}

// AgentExtension is an extension the agent supports.
type AgentExtension struct {
	URI         string         `json:"uri"`
	Description string         `json:"description,omitempty"`
	Required    bool           `json:"required"`
	Params      map[string]any `json:"params,omitempty"`
}

// AgentSkill is something the agent can do.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

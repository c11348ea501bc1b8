package events

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
)

// SchemaVersion is written into every envelope this runtime produces.
const SchemaVersion = "agentruntime-0.1.0"

// Invalid explains why an envelope cannot be appended.
type Invalid struct {
	Field  string
	Reason string
}

func (e *Invalid) Error() string { return fmt.Sprintf("invalid event: %s: %s", e.Field, e.Reason) }

// Value returns the envelope's value for a scope id.
func Value(ev *eventsv1.RuntimeEvent, s Scope) string {
	switch s {
	case SessionID:
		return ev.GetSessionId()
	case ThreadID:
		return ev.GetThreadId()
	case TurnID:
		return ev.GetTurnId()
	case TaskID:
		return ev.GetTaskId()
	case RunID:
		return ev.GetRunId()
	case StepID:
		return ev.GetStepId()
	case ToolCallID:
		return ev.GetToolCallId()
	case ActionID:
		return ev.GetActionId()
	case SubagentID:
		return ev.GetSubagentId()
	case ProcessID:
		return ev.GetProcessId()
	case JobID:
		return ev.GetJobId()
	case ChannelID:
		return ev.GetChannelId()
	case EvidenceID:
		return ev.GetEvidenceId()
	}
	return ""
}

var payloadOneof = (&eventsv1.RuntimeEvent{}).ProtoReflect().Descriptor().Oneofs().ByName("payload")

// PayloadField is the name of the payload field for an event type: the type
// with dots replaced by underscores ("rate_limit.hit" -> "rate_limit_hit").
func PayloadField(typ string) string { return strings.ReplaceAll(typ, ".", "_") }

// Validate checks what every appended envelope must satisfy: a registered
// type, an event id, a tenant, a timestamp, the scope ids its class requires,
// subject-safe ids, and a payload (when set) of the envelope's own class.
func Validate(ev *eventsv1.RuntimeEvent) error {
	class, ok := Lookup(ev.GetType())
	if !ok {
		return &Invalid{Field: "type", Reason: fmt.Sprintf("%q is not a registered event class", ev.GetType())}
	}
	if err := ids.Validate(ev.GetEventId()); err != nil {
		return &Invalid{Field: "event_id", Reason: err.Error()}
	}
	if err := ids.Validate(ev.GetTenantId()); err != nil {
		return &Invalid{Field: "tenant_id", Reason: err.Error()}
	}
	if ev.GetTimestamp() == nil {
		return &Invalid{Field: "timestamp", Reason: "missing"}
	}
	for _, s := range class.Requires {
		if Value(ev, s) == "" {
			return &Invalid{Field: string(s), Reason: fmt.Sprintf("required by %s", class.Type)}
		}
	}
	for _, s := range []Scope{SessionID, ThreadID, TurnID, TaskID, RunID, SubagentID, ProcessID, JobID, ChannelID} {
		if v := Value(ev, s); v != "" {
			if err := ids.Validate(v); err != nil {
				return &Invalid{Field: string(s), Reason: err.Error()}
			}
		}
	}
	if f := ev.ProtoReflect().WhichOneof(payloadOneof); f != nil && string(f.Name()) != class.PayloadField {
		return &Invalid{Field: "payload", Reason: fmt.Sprintf("%s payload on a %s event", f.Name(), class.Type)}
	}
	return nil
}

// payloadFields lists the oneof's field names; the registry test checks each
// belongs to a registered class.
func payloadFields() []protoreflect.Name {
	var out []protoreflect.Name
	fields := payloadOneof.Fields()
	for i := 0; i < fields.Len(); i++ {
		out = append(out, fields.Get(i).Name())
	}
	return out
}

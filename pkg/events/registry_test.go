package events

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func schemaTypes(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties struct {
			Type struct {
				Enum []string `json:"enum"`
			} `json:"type"`
		} `json:"properties"`
		AllOf []struct {
			Properties struct {
				Type struct {
					Enum []string `json:"enum"`
				} `json:"type"`
			} `json:"properties"`
		} `json:"allOf"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := doc.Properties.Type.Enum
	for _, a := range doc.AllOf {
		out = append(out, a.Properties.Type.Enum...)
	}
	if len(out) == 0 {
		t.Fatalf("%s names no event types", file)
	}
	return out
}

func TestRegistryCoversThePublishedSchemas(t *testing.T) {
	for _, file := range []string{"agentruntime-event.schema.json", "agentruntime-lime-profile-event.schema.json"} {
		for _, typ := range schemaTypes(t, file) {
			if _, ok := Lookup(typ); !ok {
				t.Errorf("%s: event class %q is not registered", file, typ)
			}
		}
	}
	// Classes named only in contract pages.
	for _, typ := range []string{"channel.peer_task.linked", "channel.peer_task.updated", "subagent.output"} {
		if _, ok := Lookup(typ); !ok {
			t.Errorf("event class %q is not registered", typ)
		}
	}
	if got := len(Classes()); got != 123 {
		t.Errorf("registry has %d classes, want the spec's 123 (120 in the schema, 3 in contract pages)", got)
	}
}

func TestOwnersFollowTheDesign(t *testing.T) {
	want := map[string]Owner{
		"turn.submitted":            Control,
		"queue.changed":             Control,
		"channel.peer_task.linked":  Control,
		"task.attempt.failed":       Tasks,
		"task.dependency.updated":   Tasks,
		"job.item.failed":           Tasks,
		"task.profile.resolved":     Routing,
		"limit.changed":             Routing,
		"rate_limit.hit":            Routing,
		"hook.failed":               Permission,
		"policy.changed":            Permission,
		"evidence.changed":          Evidence,
		"benchmark.reward.recorded": Evidence,
	}
	for typ, owner := range want {
		if c, _ := Lookup(typ); c.Owner != owner {
			t.Errorf("%s is owned by %q, want %q", typ, c.Owner, owner)
		}
	}
	for _, c := range Classes() {
		if !slices.Contains(Owners, c.Owner) {
			t.Errorf("%s has unknown owner %q", c.Type, c.Owner)
		}
	}
}

func TestRequiredScopesIncludeTheLimeProfileRules(t *testing.T) {
	cases := map[string][]Scope{
		"session.created":              {SessionID},
		"thread.started":               {SessionID, ThreadID},
		"turn.submitted":               {SessionID, ThreadID, TurnID},
		"tool.result":                  {SessionID, ThreadID, TurnID, StepID, ToolCallID},
		"action.required":              {SessionID, ThreadID, TurnID, ActionID},
		"task.created":                 {TaskID},
		"task.attempt.started":         {TaskID, RunID},
		"subagent.output":              {SubagentID},
		"evidence.changed":             {EvidenceID},
		"benchmark.trial.started":      {TaskID, RunID, ThreadID, TurnID},
		"benchmark.reward.recorded":    {TaskID, RunID},
		"task.profile.resolved":        {TaskID},
		"rate_limit.hit":               {SessionID, ThreadID, TurnID},
		"process.output":               {ProcessID},
		"channel.permission_forwarded": {ChannelID},
		"job.item.completed":           {JobID},
		"limit.changed":                nil,
	}
	for typ, want := range cases {
		c, ok := Lookup(typ)
		if !ok {
			t.Fatalf("%s not registered", typ)
		}
		got := slices.Clone(c.Requires)
		slices.Sort(got)
		w := slices.Clone(want)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s requires %v, want %v", typ, got, w)
		}
	}
}

func TestEveryPayloadFieldNamesARegisteredClass(t *testing.T) {
	fields := payloadFields()
	if len(fields) == 0 {
		t.Fatal("the envelope has no payload fields")
	}
	byField := map[string]string{}
	for _, c := range Classes() {
		byField[PayloadField(c.Type)] = c.Type
	}
	for _, f := range fields {
		if _, ok := byField[string(f)]; !ok {
			t.Errorf("payload field %s matches no registered class (name it after the type, dots as underscores)", f)
		}
	}
}

func valid() *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{
		Type:      "runtime.warning",
		EventId:   "evt_1",
		TenantId:  "acme",
		SessionId: "sess_1",
		Timestamp: timestamppb.New(time.Unix(1, 0)),
		Payload:   &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: "x"}},
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*eventsv1.RuntimeEvent)
		field string
	}{
		{"valid", func(*eventsv1.RuntimeEvent) {}, ""},
		{"unknown type", func(e *eventsv1.RuntimeEvent) { e.Type = "turn.exploded" }, "type"},
		{"no event id", func(e *eventsv1.RuntimeEvent) { e.EventId = "" }, "event_id"},
		{"no tenant", func(e *eventsv1.RuntimeEvent) { e.TenantId = "" }, "tenant_id"},
		{"tenant with a dot", func(e *eventsv1.RuntimeEvent) { e.TenantId = "a.b" }, "tenant_id"},
		{"no timestamp", func(e *eventsv1.RuntimeEvent) { e.Timestamp = nil }, "timestamp"},
		{"session with a wildcard", func(e *eventsv1.RuntimeEvent) { e.SessionId = "s*" }, "session_id"},
		{"missing required scope", func(e *eventsv1.RuntimeEvent) {
			e.Type = "turn.started"
			e.Payload = nil
		}, "thread_id"},
		{"payload of another class", func(e *eventsv1.RuntimeEvent) { e.Type = "runtime.error" }, "payload"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := valid()
			c.edit(ev)
			err := Validate(ev)
			if c.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			inv, ok := err.(*Invalid)
			if !ok || inv.Field != c.field {
				t.Fatalf("got %v, want an error on %s", err, c.field)
			}
			if !strings.Contains(inv.Error(), c.field) {
				t.Fatalf("error %q does not name the field", inv)
			}
		})
	}
}

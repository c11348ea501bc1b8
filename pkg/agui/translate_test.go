package agui

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/clienttool"
	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func ev(typ, step, call string, payload func(*eventsv1.RuntimeEvent)) *eventsv1.RuntimeEvent {
	e := &eventsv1.RuntimeEvent{Type: typ, StepId: step, ToolCallId: call}
	if payload != nil {
		payload(e)
	}
	return e
}

// A model step with reasoning, text and a tool call, as the runtime
// records it, becomes AG-UI's nested messages, call and steps, each opened
// and closed once.
func TestTranslatorMapsAModelStepAndItsToolCall(t *testing.T) {
	tr := newTranslator()
	log := []*eventsv1.RuntimeEvent{
		ev(events.TypeModelRequested, "s1", "", nil),
		ev(events.TypeReasoningDelta, "s1", "", func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_ReasoningDelta{ReasoningDelta: &eventsv1.ReasoningDelta{Text: "think"}}
		}),
		ev(events.TypeModelDelta, "s1", "", func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: "Hel"}}
		}),
		ev(events.TypeModelDelta, "s1", "", func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: "lo"}}
		}),
		ev(events.TypeModelCompleted, "s1", "", nil),
		ev(events.TypeToolStarted, "s1", "c1", func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_ToolStarted{ToolStarted: &eventsv1.ToolStarted{ToolName: "read_file"}}
		}),
		ev(events.TypeToolArgs, "s1", "c1", func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_ToolArgs{ToolArgs: &eventsv1.ToolArgs{SafeArgsJson: `{"path":"a"}`}}
		}),
		ev(events.TypeToolFailed, "s1", "c1", func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_ToolFailed{ToolFailed: &eventsv1.ToolFailed{Category: "not_found", Message: "no a"}}
		}),
		// Facts with no AG-UI counterpart map to nothing.
		ev(events.TypeToolCatalogResolved, "s1", "catalog", nil),
	}
	var got []string
	var out []Event
	for _, e := range log {
		for _, a := range tr.translate(e) {
			got = append(got, a.Type+" "+a.MessageID+a.ToolCallID+a.StepName)
			out = append(out, a)
		}
	}
	want := []string{
		"STEP_STARTED model:s1",
		"REASONING_START s1-reasoning", "REASONING_MESSAGE_START s1-reasoning", "REASONING_MESSAGE_CONTENT s1-reasoning",
		"REASONING_MESSAGE_END s1-reasoning", "REASONING_END s1-reasoning",
		"TEXT_MESSAGE_START s1", "TEXT_MESSAGE_CONTENT s1", "TEXT_MESSAGE_CONTENT s1", "TEXT_MESSAGE_END s1",
		"STEP_FINISHED model:s1",
		"TOOL_CALL_START c1", "STEP_STARTED tool:read_file:c1", "TOOL_CALL_ARGS c1", "TOOL_CALL_END c1",
		"TOOL_CALL_RESULT c1-resultc1", "STEP_FINISHED tool:read_file:c1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	result := out[len(out)-2]
	if *result.Content != "error (not_found): no a" || result.Role != "tool" {
		t.Errorf("a failed tool's result: %+v", result)
	}
	if start := out[11]; start.ParentMessageID != "s1" || start.ToolCallName != "read_file" {
		t.Errorf("the call's start: %+v", start)
	}
}

// The tracker closes what a run leaves open and reopens it, with the same
// ids, in the next run.
func TestTrackerClosesAndReopensWhatIsOpen(t *testing.T) {
	tr := newTracker()
	for _, e := range []Event{
		{Type: StepStarted, StepName: "model:s1"},
		{Type: ReasoningStart, MessageID: "r"},
		{Type: ReasoningMessageStart, MessageID: "r"},
		{Type: ReasoningMessageEnd, MessageID: "r"},
		{Type: TextMessageStart, MessageID: "s1"},
		{Type: ToolCallStart, ToolCallID: "c1", ToolCallName: "x", ParentMessageID: "s1"},
		{Type: ToolCallStart, ToolCallID: "c2", ToolCallName: "y"},
		{Type: ToolCallEnd, ToolCallID: "c2"},
	} {
		tr.apply(e)
	}
	names := func(evs []Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, e.Type+" "+e.MessageID+e.ToolCallID+e.StepName)
		}
		return out
	}
	if got, want := names(tr.closeAll()), []string{"REASONING_END r", "TEXT_MESSAGE_END s1", "TOOL_CALL_END c1", "STEP_FINISHED model:s1"}; !slices.Equal(got, want) {
		t.Errorf("closeAll = %v, want %v", got, want)
	}
	reopen := tr.reopen()
	if got, want := names(reopen), []string{"STEP_STARTED model:s1", "TEXT_MESSAGE_START s1", "REASONING_START r", "TOOL_CALL_START c1"}; !slices.Equal(got, want) {
		t.Errorf("reopen = %v, want %v", got, want)
	}
	if c := reopen[3]; c.ToolCallName != "x" || c.ParentMessageID != "s1" {
		t.Errorf("a reopened call: %+v", c)
	}
}

// A front-end tool's call streams as a call, but its result is the front
// end's own tool message: the runtime's tool.result only ends its step. A
// runtime tool's result is still sent.
func TestTranslatorSendsNoResultForAFrontEndToolsCall(t *testing.T) {
	tr := newTranslator()
	started := func(call, name string) *eventsv1.RuntimeEvent {
		return ev(events.TypeToolStarted, "s1", call, func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_ToolStarted{ToolStarted: &eventsv1.ToolStarted{ToolName: name}}
		})
	}
	result := func(call string) *eventsv1.RuntimeEvent {
		return ev(events.TypeToolResult, "s1", call, func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_ToolResult{ToolResult: &eventsv1.ToolResult{Preview: "23:59"}}
		})
	}
	var got []string
	for _, e := range []*eventsv1.RuntimeEvent{
		started("c1", "browser_time"),
		ev(events.TypeActionResolved, "s1", "c1", func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_ActionResolved{ActionResolved: &eventsv1.ActionResolved{ActionType: clienttool.ActionType}}
		}),
		result("c1"),
		started("c2", "read_file"),
		result("c2"),
	} {
		tr.clientCall(e)
		for _, a := range tr.translate(e) {
			got = append(got, a.Type+" "+a.ToolCallID+a.StepName)
		}
	}
	want := []string{
		"TOOL_CALL_START c1", "STEP_STARTED tool:browser_time:c1", "TOOL_CALL_END c1", "STEP_FINISHED tool:browser_time:c1",
		"TOOL_CALL_START c2", "STEP_STARTED tool:read_file:c2", "TOOL_CALL_END c2", "TOOL_CALL_RESULT c2", "STEP_FINISHED tool:read_file:c2",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

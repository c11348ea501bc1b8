package a2a

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func ev(seq uint64, typ string, set func(*eventsv1.RuntimeEvent)) *eventsv1.RuntimeEvent {
	e := &eventsv1.RuntimeEvent{Sequence: seq, Type: typ, TurnId: "turn_1"}
	if set != nil {
		set(e)
	}
	return e
}

// A turn that asks for an approval and completes folds into the task
// states A2A clients expect, with the action's prompt and decisions while
// it waits and the answer as the artifact and the final message.
func TestTaskViewFoldsATurn(t *testing.T) {
	v := newTaskView("turn_1", "s1")
	turn := []*eventsv1.RuntimeEvent{
		ev(1, events.TypeTurnSubmitted, nil),
		ev(2, events.TypeTurnStarted, nil),
		ev(3, events.TypeModelDelta, nil),
		ev(4, events.TypeActionRequired, func(e *eventsv1.RuntimeEvent) {
			e.ActionId = "perm_1"
			e.Payload = &eventsv1.RuntimeEvent_ActionRequired{ActionRequired: &eventsv1.ActionRequired{
				ActionType: "permission", Prompt: "Allow write_file?", Decisions: []string{"allow_once", "deny"}}}
		}),
		ev(5, events.TypeActionResolved, func(e *eventsv1.RuntimeEvent) { e.ActionId = "perm_1" }),
		ev(6, events.TypeTurnCompleted, func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: "Done."}}
		}),
	}
	var got []string
	for _, e := range turn {
		for _, item := range v.apply(e) {
			switch {
			case item.StatusUpdate != nil:
				got = append(got, item.StatusUpdate.Status.State)
				if item.StatusUpdate.Status.State == StateInputRequired {
					parts := item.StatusUpdate.Status.Message.Parts
					if *parts[0].Text != "Allow write_file?" || !strings.Contains(string(parts[1].Data), `"decisions":["allow_once","deny"]`) {
						t.Errorf("input-required message: %s %s", *parts[0].Text, parts[1].Data)
					}
				}
			case item.ArtifactUpdate != nil:
				got = append(got, "artifact:"+*item.ArtifactUpdate.Artifact.Parts[0].Text)
			}
		}
	}
	want := []string{StateWorking, StateInputRequired, StateWorking, "artifact:Done.", StateCompleted}
	if !slices.Equal(got, want) {
		t.Fatalf("items %v, want %v", got, want)
	}
	task := v.snapshot()
	if task.Status.State != StateCompleted || *task.Status.Message.Parts[0].Text != "Done." || len(task.Artifacts) != 1 {
		t.Errorf("task %+v", task)
	}
	// An event of another action does not resume a wait.
	w := newTaskView("turn_1", "s1")
	w.apply(turn[3])
	if out := w.apply(ev(7, events.TypeActionResolved, func(e *eventsv1.RuntimeEvent) { e.ActionId = "perm_other" })); out != nil || w.task.Status.State != StateInputRequired {
		t.Errorf("another action's resolution: %v, state %s", out, w.task.Status.State)
	}
}

// A clipped summary is not the answer: the final step's text is.
func TestTaskViewWholeAnswer(t *testing.T) {
	long := strings.Repeat("a", 2500)
	v := newTaskView("turn_1", "s1")
	deltas := []struct{ step, text string }{{"s1", "earlier"}, {"s2", long[:1000]}, {"s2", long[1000:]}}
	for i, d := range deltas {
		v.apply(ev(uint64(i+1), events.TypeModelDelta, func(e *eventsv1.RuntimeEvent) {
			e.StepId = d.step
			e.Payload = &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: d.text}}
		}))
	}
	v.apply(ev(9, events.TypeTurnCompleted, func(e *eventsv1.RuntimeEvent) {
		e.Payload = &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: long[:2000] + "…"}}
	}))
	if got := *v.task.Artifacts[0].Parts[0].Text; got != long {
		t.Errorf("answer of %d characters, want %d", len(got), len(long))
	}
	// An unclipped summary is the answer as it is.
	w := newTaskView("turn_1", "s1")
	w.apply(ev(9, events.TypeTurnCompleted, func(e *eventsv1.RuntimeEvent) {
		e.Payload = &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: "Done."}}
	}))
	if got := *w.task.Artifacts[0].Parts[0].Text; got != "Done." {
		t.Errorf("answer %q", got)
	}
}

// A cancelled turn is canceled, a failed one failed, with the reason.
func TestTaskViewEnds(t *testing.T) {
	for outcome, want := range map[eventsv1.TurnOutcome]string{
		eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED: StateCanceled,
		eventsv1.TurnOutcome_TURN_OUTCOME_FAILED:    StateFailed,
		eventsv1.TurnOutcome_TURN_OUTCOME_TIMED_OUT: StateFailed,
	} {
		v := newTaskView("turn_1", "s1")
		v.apply(ev(1, events.TypeTurnFailed, func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: &eventsv1.TurnFailed{Outcome: outcome, Category: "provider_error", Message: "boom"}}
		}))
		if v.task.Status.State != want || *v.task.Status.Message.Parts[0].Text != "provider_error: boom" {
			t.Errorf("%s: %+v", outcome, v.task.Status)
		}
	}
}

// A queued turn taken out of the queue is canceled; another turn's
// removal changes nothing.
func TestTaskViewQueueRemoval(t *testing.T) {
	v := newTaskView("turn_1", "s1")
	removed := func(turn string) *eventsv1.RuntimeEvent {
		return ev(2, events.TypeQueueChanged, func(e *eventsv1.RuntimeEvent) {
			e.Payload = &eventsv1.RuntimeEvent_QueueChanged{QueueChanged: &eventsv1.QueueChanged{Change: "removed", TurnId: turn, Reason: "interrupted: A2A CancelTask"}}
		})
	}
	if out := v.apply(removed("turn_2")); out != nil || v.task.Status.State != StateSubmitted {
		t.Errorf("another turn's removal: %v %s", out, v.task.Status.State)
	}
	v.apply(removed("turn_1"))
	if v.task.Status.State != StateCanceled || !strings.Contains(*v.task.Status.Message.Parts[0].Text, "A2A CancelTask") {
		t.Errorf("removal: %+v", v.task.Status)
	}
}

func TestCursors(t *testing.T) {
	c, err := parseCursor("41.1")
	if err != nil || c != (cursor{seq: 41, k: 1}) || c.String() != "41.1" {
		t.Fatalf("41.1: %v %v", c, err)
	}
	if !c.after(cursor{41, 0}) || c.after(cursor{41, 1}) || c.after(cursor{42, 0}) {
		t.Error("order")
	}
	for _, bad := range []string{"", "41", "a.1", "41.-1", "41.1.2", "-1.0"} {
		if _, err := parseCursor(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestContexts(t *testing.T) {
	for in, want := range map[string][2]string{"s1": {"s1", "s1"}, "s1/t1": {"s1", "t1"}} {
		s, th, err := parseContext("f", in)
		if err != nil || s != want[0] || th != want[1] || contextOf(s, th) != in {
			t.Errorf("%q: %s %s %v", in, s, th, err)
		}
	}
	for _, bad := range []string{"a b", "s/", "/t", "s/t/u", strings.Repeat("x", 129)} {
		if _, _, err := parseContext("params.message.contextId", bad); err == nil || err.Data["field"] != "params.message.contextId" {
			t.Errorf("%q: %v", bad, err)
		}
	}
	s, th := newContext()
	if s != th || !idPattern.MatchString(s) {
		t.Errorf("new context %s %s", s, th)
	}
}

func TestAnswers(t *testing.T) {
	perm := &controlv1.Action{ActionId: "perm_1", Decisions: []string{"allow_once", "allow_session", "deny"}}
	other := &controlv1.Action{ActionId: "input_2", Decisions: []string{"submit", "cancel"}}
	text := func(s string) []Part { return []Part{TextPart(s)} }
	data := func(v any) []Part { raw, _ := json.Marshal(v); return []Part{{Data: raw}} }
	for _, c := range []struct {
		parts    []Part
		action   string
		decision string
		payload  string
	}{
		{text("yes"), "perm_1", "allow_once", ""},
		{text(" Approve. "), "perm_1", "allow_once", ""},
		{text("allow_session"), "perm_1", "allow_session", ""},
		{text("no"), "perm_1", "deny", ""},
		{data(map[string]any{"decision": "deny"}), "perm_1", "deny", ""},
		{data(map[string]any{"actionId": "input_2", "decision": "submit", "payload": map[string]any{"x": 1}}), "input_2", "submit", `{"x":1}`},
	} {
		a, ans, err := answerOf(c.parts, []*controlv1.Action{perm, other})
		if err != nil || a.GetActionId() != c.action || ans.decision != c.decision || ans.payload != c.payload {
			t.Errorf("%+v: %v %+v %v", c.parts, a.GetActionId(), ans, err)
		}
	}
	for _, c := range []struct {
		parts []Part
		field string
	}{
		{text("perhaps"), "params.message.parts"},
		{data(map[string]any{"decision": "maybe"}), "params.message.parts[0].data.decision"},
		{data(map[string]any{"actionId": "nope", "decision": "deny"}), "params.message.parts[0].data.actionId"},
		{data("deny"), "params.message.parts[0].data"},
	} {
		if _, _, err := answerOf(c.parts, []*controlv1.Action{perm, other}); err == nil || err.Data["field"] != c.field {
			t.Errorf("%+v: %v, want an error naming %s", c.parts, err, c.field)
		}
	}
}

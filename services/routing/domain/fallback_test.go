package domain

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/fault"
	ev "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// TestStepForFallbackEveryStateAndReport covers each turn state a report
// can meet with each kind of report: the current model, a model that
// failed before in the turn, and a model that never served it.
func TestStepForFallbackEveryStateAndReport(t *testing.T) {
	onA := &ev.RoutingDecision{SelectedModelId: "a"}
	states := []struct {
		name    string
		current *ev.RoutingDecision
		failed  []string
	}{
		{"no decision", nil, nil},
		{"decided on a", onA, nil},
		{"fell back from b to a", onA, []string{"b"}},
		{"a failed and nothing replaced it", onA, []string{"a"}},
		{"fell back to a, then no candidate at decide", nil, []string{"b"}},
	}
	const apply, replay, noDecision, notCurrent = "apply", "replay", ReasonNoDecision, ReasonNotCurrentModel
	want := map[string]map[string]string{ // state -> reported model -> outcome
		"no decision":                                 {"a": noDecision, "b": noDecision, "c": noDecision},
		"decided on a":                                {"a": apply, "b": notCurrent, "c": notCurrent},
		"fell back from b to a":                       {"a": apply, "b": replay, "c": notCurrent},
		"a failed and nothing replaced it":            {"a": replay, "b": notCurrent, "c": notCurrent},
		"fell back to a, then no candidate at decide": {"a": noDecision, "b": replay, "c": noDecision},
	}
	for _, s := range states {
		for _, model := range []string{"a", "b", "c"} {
			t.Run(fmt.Sprintf("%s/report %s", s.name, model), func(t *testing.T) {
				step, err := StepForFallback("turn1", s.current, s.failed, model)
				got := map[FallbackStep]string{FallbackApply: apply, FallbackReplay: replay}[step]
				var de *fault.Error
				if errors.As(err, &de) {
					if de.Kind != fault.KindPrecondition || de.Subject != "turn/turn1" {
						t.Fatalf("error %+v", de)
					}
					got = de.Reason
					if de.Reason == ReasonNotCurrentModel && de.Metadata["selected_model_id"] != "a" {
						t.Fatalf("NOT_CURRENT_MODEL does not name the current model: %+v", de)
					}
				} else if err != nil {
					t.Fatal(err)
				}
				if got != want[s.name][model] {
					t.Fatalf("got %q, want %q", got, want[s.name][model])
				}
			})
		}
	}
}

func decided(model string) *ev.RuntimeEvent {
	return &ev.RuntimeEvent{Type: "routing.decided", EventId: "d-" + model, Payload: &ev.RuntimeEvent_RoutingDecided{
		RoutingDecided: &ev.RoutingDecided{Decision: &ev.RoutingDecision{SelectedModelId: model}}}}
}

func single(model string) *ev.RuntimeEvent {
	return &ev.RuntimeEvent{Type: "routing.single_candidate", EventId: "s-" + model, Payload: &ev.RuntimeEvent_RoutingSingleCandidate{
		RoutingSingleCandidate: &ev.RoutingSingleCandidate{Decision: &ev.RoutingDecision{SelectedModelId: model}}}}
}

func fellBack(from, to string) *ev.RuntimeEvent {
	return &ev.RuntimeEvent{Type: "routing.fallback.applied", EventId: "f-" + from, Payload: &ev.RuntimeEvent_RoutingFallbackApplied{
		RoutingFallbackApplied: &ev.RoutingFallbackApplied{FailedModelId: from, Decision: &ev.RoutingDecision{SelectedModelId: to}}}}
}

func notPossible(stage, id string) *ev.RuntimeEvent {
	return &ev.RuntimeEvent{Type: "routing.not_possible", EventId: id, Payload: &ev.RuntimeEvent_RoutingNotPossible{
		RoutingNotPossible: &ev.RoutingNotPossible{Stage: stage}}}
}

func TestEarlierFallbackFindsTheOutcomeOfAReport(t *testing.T) {
	other := &ev.RuntimeEvent{Type: "cost.recorded", EventId: "cost", Payload: &ev.RuntimeEvent_CostRecorded{CostRecorded: &ev.CostRecorded{ModelId: "a"}}}
	for _, c := range []struct {
		name   string
		events []*ev.RuntimeEvent
		model  string
		want   string // event id; "" = an error
	}{
		{"the fallback that replaced the model", []*ev.RuntimeEvent{decided("a"), other, fellBack("a", "b")}, "a", "f-a"},
		{"an earlier fallback after later ones", []*ev.RuntimeEvent{decided("a"), fellBack("a", "b"), fellBack("b", "c")}, "a", "f-a"},
		{"the latest fallback", []*ev.RuntimeEvent{decided("a"), fellBack("a", "b"), fellBack("b", "c")}, "b", "f-b"},
		{"not possible while the model was selected", []*ev.RuntimeEvent{single("a"), notPossible(StageFallback, "np")}, "a", "np"},
		{"not possible after a fallback to the model", []*ev.RuntimeEvent{decided("a"), fellBack("a", "b"), notPossible(StageFallback, "np")}, "b", "np"},
		{"a not possible of another selection is not this report's", []*ev.RuntimeEvent{decided("a"), fellBack("a", "b"), notPossible(StageFallback, "np")}, "c", ""},
		{"a decide-stage not possible clears the selection", []*ev.RuntimeEvent{decided("a"), notPossible(StageDecide, "np1"), notPossible(StageFallback, "np2")}, "a", ""},
		{"a new decision changes the selection", []*ev.RuntimeEvent{decided("a"), decided("b"), notPossible(StageFallback, "np")}, "b", "np"},
		{"no outcome at all", []*ev.RuntimeEvent{decided("a")}, "a", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := EarlierFallback(c.events, c.model)
			if c.want == "" {
				if err == nil {
					t.Fatalf("want an error, got %v", e)
				}
				return
			}
			if err != nil || e.GetEventId() != c.want {
				t.Fatalf("got %v, %v; want %s", e, err, c.want)
			}
		})
	}
}

package domain

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// TestStepForFallbackEveryStateAndReport covers each turn state a report
// can meet with each kind of report: the current model, a model that
// failed before in the turn, and a model that never served it.
func TestStepForFallbackEveryStateAndReport(t *testing.T) {
	onA := &eventsv1.RoutingDecision{SelectedModelId: "a"}
	states := []struct {
		name    string
		current *eventsv1.RoutingDecision
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

func decided(model string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: "routing.decided", EventId: "d-" + model, Payload: &eventsv1.RuntimeEvent_RoutingDecided{
		RoutingDecided: &eventsv1.RoutingDecided{Decision: &eventsv1.RoutingDecision{SelectedModelId: model}}}}
}

func single(model string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: "routing.single_candidate", EventId: "s-" + model, Payload: &eventsv1.RuntimeEvent_RoutingSingleCandidate{
		RoutingSingleCandidate: &eventsv1.RoutingSingleCandidate{Decision: &eventsv1.RoutingDecision{SelectedModelId: model}}}}
}

func fellBack(from, to string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: "routing.fallback.applied", EventId: "f-" + from, Payload: &eventsv1.RuntimeEvent_RoutingFallbackApplied{
		RoutingFallbackApplied: &eventsv1.RoutingFallbackApplied{FailedModelId: from, Decision: &eventsv1.RoutingDecision{SelectedModelId: to}}}}
}

func notPossible(stage, id string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: "routing.not_possible", EventId: id, Payload: &eventsv1.RuntimeEvent_RoutingNotPossible{
		RoutingNotPossible: &eventsv1.RoutingNotPossible{Stage: stage}}}
}

func TestEarlierFallbackFindsTheOutcomeOfAReport(t *testing.T) {
	other := &eventsv1.RuntimeEvent{Type: "cost.recorded", EventId: "cost", Payload: &eventsv1.RuntimeEvent_CostRecorded{CostRecorded: &eventsv1.CostRecorded{ModelId: "a"}}}
	for _, c := range []struct {
		name   string
		events []*eventsv1.RuntimeEvent
		model  string
		want   string // event id; "" = an error
	}{
		{"the fallback that replaced the model", []*eventsv1.RuntimeEvent{decided("a"), other, fellBack("a", "b")}, "a", "f-a"},
		{"an earlier fallback after later ones", []*eventsv1.RuntimeEvent{decided("a"), fellBack("a", "b"), fellBack("b", "c")}, "a", "f-a"},
		{"the latest fallback", []*eventsv1.RuntimeEvent{decided("a"), fellBack("a", "b"), fellBack("b", "c")}, "b", "f-b"},
		{"not possible while the model was selected", []*eventsv1.RuntimeEvent{single("a"), notPossible(StageFallback, "np")}, "a", "np"},
		{"not possible after a fallback to the model", []*eventsv1.RuntimeEvent{decided("a"), fellBack("a", "b"), notPossible(StageFallback, "np")}, "b", "np"},
		{"a not possible of another selection is not this report's", []*eventsv1.RuntimeEvent{decided("a"), fellBack("a", "b"), notPossible(StageFallback, "np")}, "c", ""},
		{"a decide-stage not possible clears the selection", []*eventsv1.RuntimeEvent{decided("a"), notPossible(StageDecide, "np1"), notPossible(StageFallback, "np2")}, "a", ""},
		{"a new decision changes the selection", []*eventsv1.RuntimeEvent{decided("a"), decided("b"), notPossible(StageFallback, "np")}, "b", "np"},
		{"no outcome at all", []*eventsv1.RuntimeEvent{decided("a")}, "a", ""},
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

package domain

import (
	"fmt"
	"slices"

	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// FallbackStep is what an ApplyFallback does in the turn's state.
type FallbackStep int

const (
	// FallbackApply: the turn's current model failed; move past it.
	FallbackApply FallbackStep = iota + 1
	// FallbackReplay: this model's failure was handled already in the turn
	// (a retried report); answer the earlier outcome and append nothing.
	FallbackReplay
)

// StepForFallback decides what a report that model failed does to a turn
// whose current decision is current (nil: none, or the last decision was
// not possible) and whose reported failures are failed.
//
// A model that failed in a turn is never selected again in it, so a report
// naming one is a retry of a report that was already handled: it replays
// rather than answering NOT_CURRENT_MODEL. That holds even after later
// fallbacks moved the turn on, so a late retry cannot move the turn twice.
func StepForFallback(turnID string, current *eventsv1.RoutingDecision, failed []string, model string) (FallbackStep, error) {
	if slices.Contains(failed, model) {
		return FallbackReplay, nil
	}
	if current == nil {
		return 0, precondition(ReasonNoDecision, "turn/"+turnID,
			"turn %q has no routing decision to fall back from; call DecideRoute first", turnID)
	}
	if current.GetSelectedModelId() != model {
		e := precondition(ReasonNotCurrentModel, "turn/"+turnID,
			"turn %q is routed to %q, not %q; only the current model's failure moves it", turnID, current.GetSelectedModelId(), model)
		e.Metadata = map[string]string{"selected_model_id": current.GetSelectedModelId()}
		return 0, e
	}
	return FallbackApply, nil
}

// EarlierFallback finds, among a turn's routing events in log order, the
// outcome of the report that model failed: its routing.fallback.applied,
// or the routing.not_possible at the fallback stage appended while model
// was the turn's selection. None is an error: the read model, which
// listed model as failed, and the log disagree.
func EarlierFallback(events []*eventsv1.RuntimeEvent, model string) (*eventsv1.RuntimeEvent, error) {
	selected := ""
	for _, e := range events {
		switch {
		case e.GetRoutingDecided() != nil:
			selected = e.GetRoutingDecided().GetDecision().GetSelectedModelId()
		case e.GetRoutingSingleCandidate() != nil:
			selected = e.GetRoutingSingleCandidate().GetDecision().GetSelectedModelId()
		case e.GetRoutingFallbackApplied() != nil:
			fa := e.GetRoutingFallbackApplied()
			if fa.GetFailedModelId() == model {
				return e, nil
			}
			selected = fa.GetDecision().GetSelectedModelId()
		case e.GetRoutingNotPossible() != nil:
			np := e.GetRoutingNotPossible()
			if np.GetStage() == StageFallback && selected == model {
				return e, nil
			}
			if np.GetStage() == StageDecide {
				selected = ""
			}
		}
	}
	return nil, fmt.Errorf("routing: the read model lists %q as failed but the turn's log has no fallback outcome for it", model)
}

package events

import (
	"strings"
	"testing"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func TestTaskFailureOfTurn(t *testing.T) {
	for _, c := range []struct {
		f        *eventsv1.TurnFailed
		category string
	}{
		{&eventsv1.TurnFailed{Category: "Model-Error 429", Message: "slow down"}, "model_error_429"},
		{&eventsv1.TurnFailed{}, "internal"},
		{&eventsv1.TurnFailed{Category: "worker_shutdown", Outcome: eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED}, "cancelled"},
		{&eventsv1.TurnFailed{Category: strings.Repeat("é.", 40)}, strings.Repeat("_", 64)},
	} {
		category, msg := TaskFailureOfTurn("turn_1", c.f)
		if category != c.category || msg != "turn turn_1 failed: "+c.f.GetMessage() {
			t.Errorf("%v: %q %q, want %q", c.f, category, msg, c.category)
		}
	}
}

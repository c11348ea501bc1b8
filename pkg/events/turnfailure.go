package events

import (
	"cmp"
	"fmt"
	"strings"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// TaskFailureOfTurn is how a task run that a turn did fails when the turn
// failed: the turn's category as a task error category (lower case,
// digits and underscores, at most 64 bytes; "cancelled" when the turn
// was) and a message naming the turn. The Go worker, which follows its
// turn, and the tasks service, which settles a run handed to its turn,
// both fail the run so.
func TaskFailureOfTurn(turnID string, f *eventsv1.TurnFailed) (category, message string) {
	if f.GetOutcome() == eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED {
		category = "cancelled"
	} else {
		var b strings.Builder
		for _, r := range strings.ToLower(f.GetCategory()) {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		category = b.String()
		if len(category) > 64 {
			category = category[:64]
		}
		category = cmp.Or(category, "internal")
	}
	return category, fmt.Sprintf("turn %s failed: %s", turnID, f.GetMessage())
}

package events

import (
	"slices"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// FoldQueue applies one queue.changed to a thread's queue (front first)
// and returns the queue after it; it may reuse queue's array. queue.changed
// is a delta (docs/services/control.md, "Turns and the queue"), so every
// consumer that shows a queue holds one and folds with this: the control
// read model, the evidence export, a
// client that starts from a snapshot and follows the events after it.
//
// A turn is in a queue once, so the fold is idempotent: folding an event
// again, or an enqueued after a read model already queued the turn from its
// turn.submitted, gives the same queue. Events written before position
// existed fold the same way: enqueued at the back, promoted to the front.
func FoldQueue(queue []string, q *eventsv1.QueueChanged) []string {
	id := q.GetTurnId()
	if id == "" {
		return queue
	}
	queue = slices.DeleteFunc(queue, func(s string) bool { return s == id })
	switch q.GetChange() {
	case "enqueued":
		at := len(queue)
		if q.Position != nil {
			at = min(int(q.GetPosition()), at)
		}
		queue = slices.Insert(queue, at, id)
	case "promoted":
		queue = slices.Insert(queue, min(int(q.GetPosition()), len(queue)), id)
	}
	return queue
}

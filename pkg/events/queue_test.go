package events_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func TestFoldQueue(t *testing.T) {
	at := func(change, turn string, position uint32) *eventsv1.QueueChanged {
		return &eventsv1.QueueChanged{Change: change, TurnId: turn, Position: proto.Uint32(position)}
	}
	// Events written before position existed carry change and turn only.
	old := func(change, turn string) *eventsv1.QueueChanged {
		return &eventsv1.QueueChanged{Change: change, TurnId: turn}
	}
	cases := []struct {
		name  string
		queue []string
		q     *eventsv1.QueueChanged
		want  []string
	}{
		{"enqueued at the back", []string{"a", "b"}, at("enqueued", "c", 2), []string{"a", "b", "c"}},
		{"enqueued again is the same queue", []string{"a", "b", "c"}, at("enqueued", "c", 2), []string{"a", "b", "c"}},
		{"enqueued without position goes to the back", []string{"a", "b"}, old("enqueued", "c"), []string{"a", "b", "c"}},
		{"promoted to the front", []string{"a", "b", "c"}, at("promoted", "c", 0), []string{"c", "a", "b"}},
		{"promoted without position goes to the front", []string{"a", "b", "c"}, old("promoted", "c"), []string{"c", "a", "b"}},
		{"a position beyond the queue is its back", []string{"a"}, at("enqueued", "b", 7), []string{"a", "b"}},
		{"removed", []string{"a", "b", "c"}, at("removed", "b", 1), []string{"a", "c"}},
		{"dequeued", []string{"a", "b"}, at("dequeued", "a", 0), []string{"b"}},
		{"removing a turn not queued changes nothing", []string{"a"}, old("removed", "x"), []string{"a"}},
		{"no turn changes nothing", []string{"a"}, old("cleared", ""), []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := events.FoldQueue(slices.Clone(c.queue), c.q); !slices.Equal(got, c.want) {
				t.Fatalf("fold %v on %v = %v, want %v", c.q, c.queue, got, c.want)
			}
		})
	}
}

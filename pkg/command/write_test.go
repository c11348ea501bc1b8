package command_test

import (
	"slices"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
)

// One mapping of a command's result to the API's WriteResult: nothing
// appended or only duplicates is deduplicated; one new event is not.
func TestWriteResult(t *testing.T) {
	for _, c := range []struct {
		name     string
		appended []eventlog.Appended
		dedup    bool
	}{
		{"the decision appended nothing", nil, true},
		{"every event a duplicate", []eventlog.Appended{{EventID: "a", Duplicate: true}, {EventID: "b", Duplicate: true}}, true},
		{"one new event", []eventlog.Appended{{EventID: "a", Duplicate: true}, {EventID: "b"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := command.Result{Appended: c.appended, Sequence: 7}.Write()
			var ids []string
			for _, a := range c.appended {
				ids = append(ids, a.EventID)
			}
			if w.GetSequence() != 7 || w.GetDeduplicated() != c.dedup || !slices.Equal(w.GetEventIds(), ids) {
				t.Fatalf("Write() = %v, want sequence 7, deduplicated %v, ids %v", w, c.dedup, ids)
			}
		})
	}
}

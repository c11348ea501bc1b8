package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/quota"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// Every way of appending charges a caller's call (quota.AtDoor) before it
// publishes: a batch (a worker's reported step facts), facts, a command's
// atomic append and a plain append. A refused call publishes nothing; the
// runtime's own appends (an unmarked context) pass.
func TestEveryAppendChargesTheCallersQuota(t *testing.T) {
	log := openPartitioned(t, natstest.Connect(t, natstest.Server(t)), 1)
	ctx := testkit.Context(t)
	// A bucket of 3 events that refills one in 1000 s: none within the test.
	lim := quota.New(quota.Config{Default: quota.Limits{EventsPerSecond: 0.001}, Burst: 3000 * time.Second})
	agg := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "thread", ID: "th1"}
	fact := func() *eventsv1.RuntimeEvent {
		return &eventsv1.RuntimeEvent{Type: "model.delta", ThreadId: "th1", TurnId: "turn_1", Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: "x"}}}
	}
	head := func() uint64 {
		t.Helper()
		seq, err := log.LastSequence(ctx, agg)
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	call := func() context.Context { return quota.AtDoor(ctx, lim) }

	if _, err := log.AppendBatch(call(), []eventlog.Entry{{Aggregate: agg, Event: fact()}, {Aggregate: agg, Event: fact()}}); err != nil {
		t.Fatal(err)
	}
	before := head()
	refusals := map[string]error{}
	_, refusals["AppendBatch"] = log.AppendBatch(call(), []eventlog.Entry{{Aggregate: agg, Event: fact()}, {Aggregate: agg, Event: fact()}})
	_, refusals["AppendFacts"] = log.AppendFacts(call(), agg, fact(), fact())
	_, refusals["AppendAtomic"] = log.AppendAtomic(call(), agg, eventlog.ExpectSequence(before), fact(), fact())
	_, refusals["Append"] = log.Append(call(), agg, eventlog.Any, fact(), fact())
	for how, err := range refusals {
		if !fault.HasReason(err, quota.ReasonEventsRate) {
			t.Errorf("%s of 2 events with 1 left: %v, want %s", how, err, quota.ReasonEventsRate)
		}
	}
	if got := head(); got != before {
		t.Fatalf("refused appends published: the aggregate moved from %d to %d", before, got)
	}
	if _, err := log.AppendFacts(call(), agg, fact()); err != nil {
		t.Fatalf("the last event of the quota: %v", err)
	}
	if _, err := log.AppendFacts(ctx, agg, fact(), fact(), fact()); err != nil {
		t.Fatalf("the runtime's own appends: %v", err)
	}
}

package control_test

import (
	"context"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
)

// A report's first attempt landed its thread facts but not the step facts
// after them (the connection broke between the two appends); the retry,
// with the same event ids, appends the missing step facts and nothing
// twice.
func TestARetriedReportAppendsTheStepFactsItsFirstAttemptMissed(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	start, after := started(tu.TurnId), delta(tu.TurnId, "after the start")
	start.EventId, after.EventId = "evt_retry_start", "evt_retry_after"
	h.report(ctx, start) // the first attempt: only its thread fact landed
	h.report(ctx, start, after)
	h.report(ctx, start, after) // and a third time: nothing twice

	count := map[string]int{}
	if err := h.readLog(context.Background(), nil, func(rec *eventlog.Record) error {
		count[rec.Event.GetEventId()]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if count["evt_retry_start"] != 1 || count["evt_retry_after"] != 1 {
		t.Fatalf("in the log: turn.started %d times, the step fact after it %d times; want each once", count["evt_retry_start"], count["evt_retry_after"])
	}
}

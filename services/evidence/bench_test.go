package evidence_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/evidence/app"
	"github.com/agentruntime/agentruntime/services/evidence/domain"
	"github.com/agentruntime/agentruntime/services/evidence/readmodel"
)

// BenchmarkSession100k: a 100,000-event session (100 turns of model
// deltas and a tool call each), appended with AppendBatch. Reported, all in
// the same run: raw replay of the session through the log (the building
// block), events/s through the evidence projection from an empty store
// (replay included) and its ratio to raw replay, and the time to export the
// session's evidence pack (read, fold, render, store, record).
//
//	go test -run '^$' -bench Session100k -benchtime 1x ./services/evidence/
func BenchmarkSession100k(b *testing.B) {
	const turns, perTurn = 100, 1000
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(b, natstest.Server(b)), eventlog.Config{})
	if err != nil {
		b.Fatal(err)
	}
	agg := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "thread", ID: "th1"}
	entries := make([]eventlog.Entry, 0, turns*perTurn)
	for u := 0; u < turns; u++ {
		turn := fmt.Sprintf("turn_%03d", u)
		add := func(ev *eventsv1.RuntimeEvent) {
			ev.ThreadId, ev.TurnId = "th1", turn
			entries = append(entries, eventlog.Entry{Aggregate: agg, Expect: eventlog.Any, Event: ev})
		}
		add(&eventsv1.RuntimeEvent{Type: "turn.started", Payload: &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: "w"}}})
		add(&eventsv1.RuntimeEvent{Type: "tool.started", StepId: "st", ToolCallId: "tc_" + turn, Payload: &eventsv1.RuntimeEvent_ToolStarted{ToolStarted: &eventsv1.ToolStarted{ToolName: "grep"}}})
		add(&eventsv1.RuntimeEvent{Type: "tool.result", StepId: "st", ToolCallId: "tc_" + turn, Payload: &eventsv1.RuntimeEvent_ToolResult{ToolResult: &eventsv1.ToolResult{Preview: "ok"}}})
		for i := 0; i < perTurn-4; i++ {
			add(&eventsv1.RuntimeEvent{Type: "model.delta", Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: "tok ", Index: int64(i)}}})
		}
		add(&eventsv1.RuntimeEvent{Type: "turn.completed", Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: "done"}}})
	}
	results, err := log.AppendBatch(ctx, entries)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	n := float64(len(entries))
	head, _ := log.Head(ctx)
	filter := []string{log.Subjects.Session("acme", "s1")}

	for b.Loop() {
		t0 := time.Now()
		if _, err := log.Read(ctx, filter, eventlog.FromStart, func(*eventlog.Record) error { return nil }); err != nil {
			b.Fatal(err)
		}
		raw := time.Since(t0)

		store := projection.NewMemory()
		pctx, pcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		t0 = time.Now()
		go func() { done <- projector.Run(pctx, log, store, readmodel.Projection{}, nil) }()
		if _, err := projector.WaitFor(ctx, log, store, readmodel.Name, head, 5*time.Minute); err != nil {
			b.Fatal(err)
		}
		proj := time.Since(t0)
		pcancel()
		<-done

		a := app.New(log, store)
		t0 = time.Now()
		res, err := a.Export(ctx, app.ExportRequest{Tenant: "acme", Kind: "evidence", Scope: domain.Scope{Kind: domain.ScopeSession, Session: "s1"}})
		if err != nil {
			b.Fatal(err)
		}
		export := time.Since(t0)

		b.ReportMetric(n/raw.Seconds(), "raw-replay-events/s")
		b.ReportMetric(n/proj.Seconds(), "projection-events/s")
		b.ReportMetric(proj.Seconds()/raw.Seconds(), "projection/raw-replay-x")
		b.ReportMetric(export.Seconds()*1000, "export-ms")
		b.ReportMetric(export.Seconds()/raw.Seconds(), "export/raw-replay-x")
		b.ReportMetric(float64(res.Pack.GetSizeBytes())/1e6, "pack-MB")
	}
}

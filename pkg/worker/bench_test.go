package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

// A turn with no approval: one read, one answer (two model calls, one
// tool call) — the loop's steady shape without a human in it.
const benchScript = `
model: scripted
turns:
  - steps:
      - text: "Reading the README."
        tool_calls: [{name: read_file, arguments: {path: README.md}}]
        usage: {input_tokens: 120, output_tokens: 14}
      - text: "The README says hello."
        usage: {input_tokens: 180, output_tokens: 9}
`

// BenchmarkTurnOverhead measures the runtime's own cost per turn with the
// scripted provider (no model latency): the wall time from SubmitTurn to
// turn.completed through control, routing, permission and a worker over
// gRPC, the events the turn wrote, the ReportEvents calls that took and
// the permission service's calls of its tool call.
// Next to it, in the same run, the raw building block: appending that many
// events of the same log one at a time (eventlog.Append), so the ratio
// says how much the runtime adds over just recording the facts.
func BenchmarkTurnOverhead(b *testing.B) {
	rt := startRuntime(b)
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("hello from the README\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	rt.startWorker(b, scripted(b, benchScript), root, func(c *worker.Config) { c.Logger = slog.New(slog.DiscardHandler) })
	ctx := context.Background()
	rawAgg := eventlog.Aggregate{Tenant: "t1", Session: "bench_raw", Kind: "session", ID: "bench_raw"}
	turn := func(i int) (time.Duration, uint64) {
		before, err := rt.log.Head(ctx)
		if err != nil {
			b.Fatal(err)
		}
		session := fmt.Sprintf("s%d", i)
		s, err := rt.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: session, TypePrefixes: []string{"turn.completed", "turn.failed"},
			Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: before + 1})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: "th" + session, Input: text("what does the README say?")}); err != nil {
			b.Fatal(err)
		}
		for {
			m, err := s.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if ev := m.GetEvent(); ev != nil {
				if ev.GetType() != "turn.completed" {
					b.Fatalf("turn ended %v", ev)
				}
				d := time.Since(t0)
				// Positions are not counts (a message has slots,
				// docs/adr/0016-command-messages.md): count what the
				// session's turn wrote.
				var n uint64
				if _, err := rt.log.Read(ctx, []string{rt.log.Subjects.Session("t1", session)}, eventlog.FromSequence(before+1), func(*eventlog.Record) error {
					n++
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				return d, n
			}
		}
	}
	turn(-1) // warm up: the first turn creates the worker's caches and connections
	var turnTime, rawTime time.Duration
	var events uint64
	var reports, permissionCalls int32
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, n := turn(i)
		turnTime += d
		events += n
		reports += rt.reports(fmt.Sprintf("s%d", i))
		for _, m := range []string{permissionv1.PermissionService_EvaluatePermission_FullMethodName, permissionv1.PermissionService_ReportSandboxApplied_FullMethodName} {
			permissionCalls += rt.calls(m, fmt.Sprintf("s%d", i))
		}
		t0 := time.Now()
		for j := uint64(0); j < n; j++ {
			if _, err := rt.log.Append(ctx, rawAgg, eventlog.Any, &eventsv1.RuntimeEvent{Type: "runtime.warning",
				Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: "bench", Message: "an event of typical size for the raw side"}}}); err != nil {
				b.Fatal(err)
			}
		}
		rawTime += time.Since(t0)
	}
	b.StopTimer()
	perTurn := turnTime / time.Duration(b.N)
	rawPerTurn := rawTime / time.Duration(b.N)
	b.ReportMetric(float64(perTurn.Microseconds())/1000, "ms/turn")
	b.ReportMetric(float64(events)/float64(b.N), "events/turn")
	b.ReportMetric(float64(reports)/float64(b.N), "reports/turn")
	b.ReportMetric(float64(permissionCalls)/float64(b.N), "permission-calls/turn")
	b.ReportMetric(float64(rawPerTurn.Microseconds())/1000, "raw-append-ms/turn")
	b.ReportMetric(float64(perTurn)/float64(rawPerTurn), "ratio")
	b.ReportMetric(0, "ns/op") // the figures above; ns/op mixes both sides
}

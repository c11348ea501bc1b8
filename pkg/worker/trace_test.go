package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/metrics"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

// A turn is one trace: the submit, the worker's turn and every call it
// makes (routing, permission, its reports), the servers handling them, the
// consumers that project or react to the turn's facts (linked through the
// trace context in the events' NATS headers), and the facts themselves
// (their envelope's trace_id). Recorded with OpenTelemetry's in-memory
// exporters, with the metrics of the same run beside them.
func TestATurnIsOneTrace(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	rt := startRuntimeWith(t, false, telemetry{tp: tp, mp: mp})
	root := workspace(t)
	rt.startWorker(t, scripted(t, demoScript), root, func(c *worker.Config) { c.TracerProvider = tp })
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1", Input: text("write notes about the README")}); err != nil {
		t.Fatal(err)
	}
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once")
	done := tl.until("turn.completed")
	// The worker's span ends when its RunTurn returns, and the consumers
	// project turn.completed after it was appended: wait for both.
	testkit.Eventually(t, "the worker's turn span and the projection of turn.completed", func() bool {
		var turnEnded, projected bool
		for _, s := range spans.GetSpans() {
			turnEnded = turnEnded || s.Name == "agentruntime.turn"
			for _, a := range s.Attributes {
				if slices.Contains(consumed(s), "control") && a.Key == "agentruntime.last_sequence" && uint64(a.Value.AsInt64()) >= done.GetSequence() {
					projected = true
				}
			}
		}
		return turnEnded && projected
	})

	// The trace is the one SubmitTurn's server span started.
	var turnTrace trace.TraceID
	byTrace := map[trace.TraceID][]tracetest.SpanStub{}
	for _, s := range spans.GetSpans() {
		byTrace[s.SpanContext.TraceID()] = append(byTrace[s.SpanContext.TraceID()], s)
		if s.Name == "agentruntime.control.v1.ControlService/SubmitTurn" && s.SpanKind == trace.SpanKindServer {
			turnTrace = s.SpanContext.TraceID()
		}
	}
	if !turnTrace.IsValid() {
		t.Fatal("no server span for SubmitTurn")
	}
	in := map[string]int{}
	for _, s := range byTrace[turnTrace] {
		in[s.SpanKind.String()+" "+s.Name]++
		// A consumer may fold several projections from one feed
		// ("control+control.claims"): count each.
		for _, p := range consumed(s) {
			in["consumer of "+p]++
		}
	}
	for _, want := range []string{
		"server agentruntime.control.v1.ControlService/SubmitTurn",
		"consumer agentruntime.turn", // the worker's
		"client agentruntime.routing.v1.RoutingService/DecideRoute",
		"server agentruntime.routing.v1.RoutingService/DecideRoute",
		"client agentruntime.permission.v1.PermissionService/EvaluatePermission",
		"server agentruntime.permission.v1.PermissionService/EvaluatePermission",
		"client agentruntime.control.v1.ControlService/ReportEvents",
		"server agentruntime.control.v1.ControlService/ReportEvents",
		"consumer of control",                    // control's read model
		"consumer of control.permission-reactor", // a reactor: permission.requested becomes action.required
	} {
		if in[want] == 0 {
			var names []string
			for n := range in {
				names = append(names, n)
			}
			slices.Sort(names)
			t.Errorf("the turn's trace has no %q span; it has:\n  %s", want, strings.Join(names, "\n  "))
		}
	}
	// The worker's turn span is a child of the span turn.submitted was
	// appended in.
	for _, s := range byTrace[turnTrace] {
		if s.Name == "agentruntime.turn" && !s.Parent.IsRemote() {
			t.Errorf("the worker's turn span should continue the submit's remote span, parent %v", s.Parent)
		}
	}
	// The facts the turn's own calls appended carry the trace.
	for _, ev := range tl.seen {
		switch ev.GetType() {
		case "turn.submitted", "model.requested", "model.completed", "tool.started", "tool.result", "permission.evaluated", "permission.requested", "action.required", "turn.completed":
			if ev.GetTraceId() != turnTrace.String() {
				t.Errorf("%s at %d carries trace %q, not the turn's %s", ev.GetType(), ev.GetSequence(), ev.GetTraceId(), turnTrace)
			}
		}
	}

	// The metrics of the same run.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m.Data
		}
	}
	if _, ok := got["rpc.server.call.duration"]; !ok {
		t.Errorf("no rpc.server.call.duration; metrics: %v", keys(got))
	}
	threads, ok := got[metrics.Threads].(metricdata.Gauge[float64])
	if !ok {
		t.Fatalf("no %s gauge; metrics: %v", metrics.Threads, keys(got))
	}
	idle := 0.0
	for _, dp := range threads.DataPoints {
		if v, _ := dp.Attributes.Value("status"); v.AsString() == "idle" {
			idle = dp.Value
		}
	}
	if idle != 1 {
		t.Errorf("%s{status=idle} = %v after the turn, want 1", metrics.Threads, idle)
	}
}

// consumed is what a consumer span's projector or reactor folds.
func consumed(s tracetest.SpanStub) []string {
	for _, a := range s.Attributes {
		if a.Key == "agentruntime.consumer" {
			return strings.Split(a.Value.AsString(), "+")
		}
	}
	return nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

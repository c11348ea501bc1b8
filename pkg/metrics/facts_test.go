package metrics_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/metrics"
	"github.com/agentruntime/agentruntime/pkg/quota"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// sums reads every counter of reader as name -> "k=v,k=v" -> value.
func sums(t *testing.T, reader *sdkmetric.ManualReader) map[string]map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			out[m.Name] = map[string]int64{}
			for _, dp := range sum.DataPoints {
				out[m.Name][dp.Attributes.Encoded(attribute.DefaultEncoder())] += dp.Value
			}
		}
	}
	return out
}

func TestFactMeterCountsOnlyWhatThisProcessAppended(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	fm, err := metrics.NewFactMeter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), "rt_me")
	require.NoError(t, err)
	ctx := context.Background()
	ev := func(runtime, typ string, payload any) *eventsv1.RuntimeEvent {
		e := &eventsv1.RuntimeEvent{RuntimeId: runtime, Type: typ, TenantId: "acme"}
		switch p := payload.(type) {
		case *eventsv1.TurnFailed:
			e.Payload = &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: p}
		case *eventsv1.TurnCompleted:
			e.Payload = &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: p}
		case *eventsv1.CostRecorded:
			e.Payload = &eventsv1.RuntimeEvent_CostRecorded{CostRecorded: p}
		case *eventsv1.TaskAttemptFailed:
			e.Payload = &eventsv1.RuntimeEvent_TaskAttemptFailed{TaskAttemptFailed: p}
		case *eventsv1.RunStatus:
			e.Payload = &eventsv1.RuntimeEvent_RunStatus{RunStatus: p}
		}
		return e
	}
	fm.Observe(ctx, ev("rt_me", "turn.completed", &eventsv1.TurnCompleted{}))
	fm.Observe(ctx, ev("rt_other", "turn.completed", &eventsv1.TurnCompleted{})) // another replica's
	fm.Observe(ctx, ev("rt_me", "turn.failed", &eventsv1.TurnFailed{Outcome: eventsv1.TurnOutcome_TURN_OUTCOME_TIMED_OUT, Category: "lost"}))
	fm.Observe(ctx, ev("rt_me", "run.status", &eventsv1.RunStatus{Phase: "lost"}))
	fm.Observe(ctx, ev("rt_me", "task.attempt.failed", &eventsv1.TaskAttemptFailed{Status: tasksv1.RunStatus_RUN_STATUS_LOST}))
	fm.Observe(ctx, ev("rt_me", "cost.recorded", &eventsv1.CostRecorded{
		ModelId: "small", Cost: &eventsv1.CostBreakdown{TotalNanos: 1500},
		Usage: &eventsv1.TokenUsage{InputTokens: 10, OutputTokens: 4},
	}))

	got := sums(t, reader)
	require.Equal(t, map[string]int64{"category=,status=completed": 1, "category=lost,status=timed_out": 1}, got[metrics.TurnsEnded])
	require.Equal(t, map[string]int64{"kind=turn": 1, "kind=task": 1}, got[metrics.RunsLost])
	require.Equal(t, map[string]int64{"status=lost": 1}, got[metrics.TaskRunsEnded])
	require.Equal(t, map[string]int64{"model=small,tenant=acme": 1500}, got[metrics.CostNanos])
	require.Equal(t, map[string]int64{"kind=input,model=small,tenant=acme": 10, "kind=output,model=small,tenant=acme": 4}, got[metrics.TokensUsed])
	require.Equal(t, int64(1), got[metrics.EventsAppended]["event_family=turn,event_type=turn.completed"], "the other replica's event is its own to count")
}

func TestCatalogNamesArePrometheusSafe(t *testing.T) {
	seen := map[string]bool{}
	for _, i := range metrics.Catalog {
		require.False(t, seen[i.Name], "%s twice", i.Name)
		seen[i.Name] = true
		require.Regexp(t, `^[a-z][a-z0-9_]*$`, i.PrometheusName())
		require.NotEmpty(t, i.Description)
	}
}

// Every instrument is in docs/observability.md, under its Prometheus name.
func TestCatalogIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/observability.md")
	require.NoError(t, err)
	for _, i := range metrics.Catalog {
		require.Contains(t, string(doc), "`"+i.PrometheusName()+"`", "docs/observability.md does not list %s", i.Name)
	}
}

// On a log of three partitions the meter follows every partition: a fact
// appended to a session of each partition is counted.
func TestFactMeterFollowsEveryPartition(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	fm, err := metrics.NewFactMeter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), "rt_me")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{RuntimeID: "rt_me", Partitions: 3})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- fm.Follow(ctx, log, slog.New(slog.DiscardHandler)) }()
	defer func() { cancel(); <-done }()

	// A session of each partition.
	sessions := map[int]string{}
	for i := 0; len(sessions) < 3; i++ {
		s := fmt.Sprintf("s%d", i)
		if _, ok := sessions[log.Subjects.PartitionOf("acme", s)]; !ok {
			sessions[log.Subjects.PartitionOf("acme", s)] = s
		}
	}
	counted := func() int64 {
		return sums(t, reader)[metrics.EventsAppended]["event_family=runtime,event_type=runtime.warning"]
	}
	// The meter starts from new facts: append to each partition until one
	// is counted (its follower is live), in turn.
	for k := range 3 {
		before := counted()
		for counted() == before {
			require.NoError(t, ctx.Err(), "no fact of partition %d counted", k)
			_, err := log.Append(ctx, eventlog.Aggregate{Tenant: "acme", Session: sessions[k], Kind: "session", ID: sessions[k]}, eventlog.Any,
				&eventsv1.RuntimeEvent{Type: "runtime.warning", Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: "x"}}})
			require.NoError(t, err)
			time.Sleep(10 * time.Millisecond) // pacing the appends while the follower starts
		}
	}
}

// pkg/quota records the refusals under the catalog's name (it cannot
// import this package: this one reads the log, which charges quotas).
func TestAppendQuotaRefusalsIsTheCatalogsName(t *testing.T) {
	require.Equal(t, metrics.AppendQuotaRefusals, quota.RefusalsMetric)
}

package readmodel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/metrics"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

// Gauges reads the operator's gauges from the read model: threads by
// status, queued turns, pending actions and the age of the oldest. Every
// replica reads the same store, so a dashboard takes the max over them.
func Gauges(store projection.Store, now func() time.Time) metrics.Probe {
	return func(ctx context.Context) ([]metrics.Observation, error) {
		var out []metrics.Observation
		for _, status := range ThreadStatuses {
			n, err := store.Count(ctx, ThreadsByStatusIndex(status))
			if err != nil {
				return nil, err
			}
			out = append(out, metrics.Observation{Name: metrics.Threads, Value: float64(n), Labels: []attribute.KeyValue{attribute.String("status", enums.Word(status))}})
		}
		queued, err := store.Count(ctx, QueuedTurnsIndex)
		if err != nil {
			return nil, err
		}
		pending, err := store.Count(ctx, PendingActionsIndex)
		if err != nil {
			return nil, err
		}
		oldest, err := store.Range(ctx, PendingActionsIndex, projection.RangeQuery{Limit: 1})
		if err != nil {
			return nil, err
		}
		age := 0.0
		if len(oldest) == 1 {
			age = max(0, now().Sub(time.UnixMilli(int64(oldest[0].Score))).Seconds())
		}
		return append(out,
			metrics.Observation{Name: metrics.QueueDepth, Value: float64(queued)},
			metrics.Observation{Name: metrics.ActionsPending, Value: float64(pending)},
			metrics.Observation{Name: metrics.ActionsPendingMaxAge, Value: age},
		), nil
	}
}

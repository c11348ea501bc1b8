package metrics

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Consumers holds where each projector and reactor of the process stands,
// as their progress reports say, for the consumer gauges: how far behind
// the log each read model is, and whether it is still moving.
type Consumers struct {
	mu sync.Mutex
	at map[string]consumerAt
}

type consumerAt struct{ checkpoint, pending uint64 }

// NewConsumers registers the consumer gauges on mp.
func NewConsumers(mp metric.MeterProvider) (*Consumers, error) {
	c := &Consumers{at: map[string]consumerAt{}}
	err := Observe(mp, func(context.Context) ([]Observation, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		out := make([]Observation, 0, 2*len(c.at))
		for name, at := range c.at {
			labels := []attribute.KeyValue{attribute.String("consumer", name)}
			out = append(out,
				Observation{Name: ConsumerPending, Value: float64(at.pending), Labels: labels},
				Observation{Name: ConsumerCheckpoint, Value: float64(at.checkpoint), Labels: labels})
		}
		return out, nil
	}, ConsumerPending, ConsumerCheckpoint)
	return c, err
}

// Report records a consumer's progress (projector.WithProgress).
func (c *Consumers) Report(name string, checkpoint, pending uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at[name] = consumerAt{checkpoint: checkpoint, pending: pending}
}

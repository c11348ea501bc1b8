package metrics

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Observation is one gauge value a Probe reports.
type Observation struct {
	Name   string
	Value  float64
	Labels []attribute.KeyValue
}

// Probe reads the current values of some catalog gauges, when a reader
// (a scrape, an OTLP push) asks. An error drops that collection's values
// rather than report stale ones.
type Probe func(ctx context.Context) ([]Observation, error)

// Observe registers probe for the named catalog gauges on mp.
func Observe(mp metric.MeterProvider, probe Probe, names ...string) error {
	m := mp.Meter(meterName)
	gauges := map[string]metric.Float64ObservableGauge{}
	instruments := make([]metric.Observable, 0, len(names))
	for _, name := range names {
		inst, ok := Lookup(name)
		if !ok || inst.Kind != Gauge {
			return fmt.Errorf("metrics: %s is not a gauge of the catalog", name)
		}
		g, err := m.Float64ObservableGauge(name, metric.WithDescription(inst.Description), metric.WithUnit(inst.Unit))
		if err != nil {
			return err
		}
		gauges[name] = g
		instruments = append(instruments, g)
	}
	_, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		values, err := probe(ctx)
		if err != nil {
			return err
		}
		for _, v := range values {
			if g, ok := gauges[v.Name]; ok {
				o.ObserveFloat64(g, v.Value, metric.WithAttributes(v.Labels...))
			}
		}
		return nil
	}, instruments...)
	return err
}

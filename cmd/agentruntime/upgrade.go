package main

import (
	"context"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agentruntime/agentruntime/pkg/metrics"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/kit"
)

// startUpgrades settles, for each service whose store keeps generations
// (serve's Redis; dev's stores are in memory and rebuilt at every start),
// whether its read models are the active generation or a new one to build
// beside it (docs/upgrading.md), and exports the rebuild's progress.
func (rt *runtime) startUpgrades(ctx context.Context) (map[kit.Service]*projector.Upgrade, error) {
	upgrades := map[kit.Service]*projector.Upgrade{}
	for _, s := range rt.services {
		store, ok := rt.stores[s].(projector.Generational)
		p, runs := s.(kit.Projector)
		if !ok || !runs {
			continue
		}
		u, err := projector.StartUpgrade(ctx, rt.log, store, p.Projections(), rt.logger.With("service", s.Name()))
		if err != nil {
			return nil, err
		}
		upgrades[s] = u
	}
	if len(upgrades) == 0 {
		return upgrades, nil
	}
	err := metrics.Observe(rt.tel.MeterProvider, func(context.Context) ([]metrics.Observation, error) {
		var out []metrics.Observation
		for s, u := range upgrades {
			labels := []attribute.KeyValue{attribute.String("service", s.Name()), attribute.String("generation", u.Generation().ID)}
			rebuilding := 0.0
			if u.Rebuilding() {
				rebuilding = 1
			}
			out = append(out,
				metrics.Observation{Name: metrics.RebuildRunning, Value: rebuilding, Labels: labels},
				metrics.Observation{Name: metrics.RebuildFolded, Value: float64(u.Folded()), Labels: labels},
				metrics.Observation{Name: metrics.RebuildHead, Value: float64(u.Head()), Labels: labels})
		}
		return out, nil
	}, metrics.RebuildRunning, metrics.RebuildFolded, metrics.RebuildHead)
	return upgrades, err
}

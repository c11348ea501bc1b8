package eventlog

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/agentruntime/agentruntime/pkg/quota"
)

// charge charges an append's events and their encoded size to the
// aggregate's tenant when ctx is a caller's call (quota.AtDoor), before
// anything is published: a refused append publishes nothing. The
// runtime's own appends (reactors, sweeps) carry no ticket and pass.
func charge(ctx context.Context, agg Aggregate, msgs []*nats.Msg) error {
	size := 0
	for _, m := range msgs {
		size += len(m.Data)
	}
	return quota.Charge(ctx, agg.Tenant, len(msgs), size)
}

// chargeBatch charges a batch's events (those that became messages) to
// their aggregates' tenants, before anything is published.
func chargeBatch(ctx context.Context, entries []Entry, msgs []*nats.Msg) error {
	byTenant := map[string][]*nats.Msg{}
	var order []string
	for i, m := range msgs {
		if m == nil {
			continue
		}
		t := entries[i].Aggregate.Tenant
		if _, ok := byTenant[t]; !ok {
			order = append(order, t)
		}
		byTenant[t] = append(byTenant[t], m)
	}
	for _, t := range order {
		if err := charge(ctx, Aggregate{Tenant: t}, byTenant[t]); err != nil {
			return err
		}
	}
	return nil
}

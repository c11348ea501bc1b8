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

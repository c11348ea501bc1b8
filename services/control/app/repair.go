package app

import (
	"context"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// repair answers a session subscription (or a channel's resumption) whose
// cursor is older than the log's first sequence: the snapshot stands for
// the events retention removed, and a snapshot.repaired fact, appended to
// the log so the repair is on record, marks what the subscriber cannot
// have seen and what in the snapshot may be stale (spec: remote channel
// reconnect). The fact lands after the snapshot's sequence; the caller
// sends it right after the snapshot and not again.
func (a *App) repair(ctx context.Context, c Caller, req *controlv1.SubscribeEventsRequest, requested, first uint64) (*controlv1.Snapshot, *eventsv1.RuntimeEvent, error) {
	snap, err := a.snapshot(ctx, c, req)
	if err != nil {
		return nil, nil, err
	}
	session := req.GetSessionId()
	ev := domain.Repair(session, req.GetThreadId(), req.GetChannelId(), requested, first, snap)
	// Its own subject: a repair decides nothing and must not contend
	// with the session's commands.
	res, err := a.Log.Append(ctx, eventlog.Aggregate{Tenant: c.Tenant, Session: session, Kind: "snapshot", ID: session}, eventlog.Any, ev)
	if err != nil {
		return nil, nil, err
	}
	ev.Sequence = res[0].Sequence
	return snap, ev, nil
}

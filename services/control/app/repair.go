package app

import (
	"context"
	"fmt"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
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
	facts := []*eventsv1.RepairedFact{{
		Status: "unavailable", Kind: "events", FromSequence: requested, ToSequence: first - 1,
		Reason: fmt.Sprintf("removed by the log's retention (the first retained sequence is %d); the snapshot stands for them", first),
	}}
	if th := snap.GetThread(); th != nil {
		if t := th.GetActiveTurnId(); t != "" {
			facts = append(facts, &eventsv1.RepairedFact{
				Status: "stale", Kind: "turn", Id: t, FromSequence: requested, ToSequence: first - 1,
				Reason: "the turn was active during the removed range: what it streamed then (model, reasoning and tool deltas, process output) is unavailable; its state is the snapshot's",
			})
		}
	} else {
		for _, t := range snap.GetSession().GetThreadIds() {
			facts = append(facts, &eventsv1.RepairedFact{
				Status: "stale", Kind: "thread", Id: t, FromSequence: requested, ToSequence: first - 1,
				Reason: "a session snapshot does not carry thread state and the thread's removed events cannot be replayed: read it with GetThreadRead",
			})
		}
	}
	session := req.GetSessionId()
	ev := &eventsv1.RuntimeEvent{
		Type: events.TypeSnapshotRepaired, SessionId: session, ThreadId: req.GetThreadId(), ChannelId: req.GetChannelId(),
		Payload: &eventsv1.RuntimeEvent_SnapshotRepaired{SnapshotRepaired: &eventsv1.SnapshotRepaired{
			RequestedSequence: requested, FirstAvailableSequence: first, SnapshotSequence: snap.GetSequence(), Facts: facts,
		}},
	}
	// Its own subject: a repair decides nothing and must not contend
	// with the session's commands.
	res, err := a.Log.Append(ctx, eventlog.Aggregate{Tenant: c.Tenant, Session: session, Kind: "snapshot", ID: session}, eventlog.Any, ev)
	if err != nil {
		return nil, nil, err
	}
	ev.Sequence = res[0].Sequence
	return snap, ev, nil
}

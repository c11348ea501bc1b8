package app

import (
	"context"
	"fmt"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	authv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/auth/v1"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

// reconnectAccess is the least role ReconnectChannel declares in its proto.
var reconnectAccess = func() *authv1.Access {
	m := controlv1.File_agentruntime_control_v1_control_proto.Services().ByName("ControlService").Methods().ByName("ReconnectChannel")
	a, ok := auth.AccessOf(m)
	if !ok {
		panic("ControlService.ReconnectChannel declares no role")
	}
	return a
}()

func channelAgg(tenant, session, channel string) eventlog.Aggregate {
	return eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "channel", ID: channel}
}

// ReconnectChannel records that a remote channel is (re)connected and
// answers where its subscription resumes: right after its last
// acknowledged sequence, so nothing is missed or repeated.
func (a *App) ReconnectChannel(ctx context.Context, c Caller, req *controlv1.ReconnectChannelRequest) (*controlv1.ReconnectChannelResponse, error) {
	if err := a.requireSession(ctx, c.Tenant, req.GetSessionId()); err != nil {
		return nil, err
	}
	res, err := a.w.Execute(ctx, channelAgg(c.Tenant, req.GetSessionId(), req.GetChannelId()), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		ch, ok, err := readmodel.Channel(ctx, st, c.Tenant, req.GetChannelId())
		if err != nil {
			return nil, err
		}
		if ok && ch.SessionId != req.GetSessionId() {
			return nil, fault.NotFoundWith("channel", req.GetChannelId(), "channel "+req.GetChannelId()+" not found in session "+req.GetSessionId())
		}
		return []*eventsv1.RuntimeEvent{domain.ChannelReconnected(req.GetSessionId(), req.GetChannelId(), req.GetPeer(), ch.GetLastAckedSequence(), ok)}, nil
	})
	if err != nil {
		return nil, err
	}
	ch, _, err := readmodel.Channel(ctx, res.State, c.Tenant, req.GetChannelId())
	if err != nil {
		return nil, err
	}
	return &controlv1.ReconnectChannelResponse{Channel: ch, ResumeFromSequence: ch.GetLastAckedSequence() + 1, Sequence: res.Sequence}, nil
}

// AckEvents records the last sequence a channel has processed. Acks only
// move forward; an older ack changes nothing. A channel follows one
// session, so the sequence is a position of the session's partition of the
// log, at most its head.
func (a *App) AckEvents(ctx context.Context, c Caller, req *controlv1.AckEventsRequest) (*controlv1.AckEventsResponse, error) {
	log := a.Log.Of(c.Tenant, req.GetSessionId())
	if k, ok := log.View(); ok && req.GetSequence() != 0 && log.PartitionOfPosition(req.GetSequence()) != k {
		return nil, fault.Invalid("sequence", "%s", fmt.Sprintf("%d is not a sequence of session %s", req.GetSequence(), req.GetSessionId()))
	}
	_, head, err := log.Bounds(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetSequence() > head {
		return nil, fault.Invalid("sequence", "%s", fmt.Sprintf("%d is beyond the log's last sequence %d", req.GetSequence(), head))
	}
	res, err := a.w.Execute(ctx, channelAgg(c.Tenant, req.GetSessionId(), req.GetChannelId()), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		ch, ok, err := readmodel.Channel(ctx, st, c.Tenant, req.GetChannelId())
		if err != nil {
			return nil, err
		}
		if !ok || ch.SessionId != req.GetSessionId() {
			return nil, fault.NotFoundWith("channel", req.GetChannelId(), "channel "+req.GetChannelId()+" not found; ReconnectChannel first")
		}
		if req.GetSequence() <= ch.LastAckedSequence {
			return nil, nil
		}
		return []*eventsv1.RuntimeEvent{{Type: events.TypeChannelMessage, SessionId: req.GetSessionId(), ChannelId: req.GetChannelId(),
			Payload: &eventsv1.RuntimeEvent_ChannelMessage{ChannelMessage: &eventsv1.ChannelFact{LastAckedSequence: req.GetSequence(), Reason: "ack"}}}}, nil
	})
	if err != nil {
		return nil, err
	}
	ch, _, err := readmodel.Channel(ctx, res.State, c.Tenant, req.GetChannelId())
	if err != nil {
		return nil, err
	}
	return &controlv1.AckEventsResponse{Channel: ch, Sequence: res.Sequence}, nil
}

// DisconnectChannel records that a channel's stream ended, when the
// caller may keep a channel (the role ReconnectChannel declares): a
// viewer may follow a channel's session but appends nothing to the log,
// not even the end of its own stream. It decides on the channel's own
// facts, as ReconnectChannel and AckEvents do, not on the read model: a
// stream that ends right after its ReconnectChannel (the read model not yet
// folded its channel.reconnected) still records its end, and the end
// carries the channel's last acknowledged sequence, not an older one.
func (a *App) DisconnectChannel(ctx context.Context, c Caller, session, channel, reason string) error {
	if !auth.Permits(reconnectAccess, c.Role) {
		return nil
	}
	_, err := a.w.Execute(ctx, channelAgg(c.Tenant, session, channel), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		ch, ok, err := readmodel.Channel(ctx, st, c.Tenant, channel)
		if err != nil || !ok || ch.SessionId != session {
			return nil, err
		}
		return []*eventsv1.RuntimeEvent{domain.ChannelDisconnected(session, channel, ch.LastAckedSequence, reason)}, nil
	})
	return err
}

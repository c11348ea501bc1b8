package app

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// ReportEvents appends a worker's facts for one known turn: step facts
// (model, reasoning, tool, process, output, context, artifact, run status)
// and the turn's own lifecycle. The scope comes from the turn; what the
// class requires beyond it (a tool call id for tool facts) must be given.
//
// fence, when set, runs inside the decision (again on every retry) and
// refuses reports the turn's current run may not make.
func (a *App) ReportEvents(ctx context.Context, c Caller, req *controlv1.ReportEventsRequest, fence func(ctx context.Context, tu *controlv1.Turn, last uint64) error) (*controlv1.ReportEventsResponse, error) {
	reported := make([]*eventsv1.RuntimeEvent, len(req.GetEvents()))
	turnID := ""
	for i, in := range req.GetEvents() {
		field := fmt.Sprintf("events[%d]", i)
		if !domain.Reportable(in.GetType()) {
			return nil, fault.Invalid(field+".type", "%s", fmt.Sprintf("%q is not a fact workers report (model, reasoning, tool, process, output, context, history, artifact.changed, run.status, turn lifecycle, subagent results)", in.GetType()))
		}
		if in.GetTurnId() == "" {
			return nil, fault.Invalid(field+".turn_id", "%s", "required: reported facts belong to a turn")
		}
		if turnID == "" {
			turnID = in.GetTurnId()
		} else if in.GetTurnId() != turnID {
			return nil, fault.Invalid(field+".turn_id", "%s", "one request reports the facts of one turn")
		}
		reported[i] = proto.Clone(in).(*eventsv1.RuntimeEvent)
	}
	tu, err := a.turn(ctx, c, turnID)
	if err != nil {
		return nil, err
	}
	for i, ev := range reported {
		field := fmt.Sprintf("events[%d]", i)
		if (ev.GetSessionId() != "" && ev.GetSessionId() != tu.SessionId) || (ev.GetThreadId() != "" && ev.GetThreadId() != tu.ThreadId) {
			return nil, fault.Invalid(field, "%s", "session or thread id differs from the turn's")
		}
		ev.SessionId, ev.ThreadId, ev.TenantId = tu.SessionId, tu.ThreadId, c.Tenant
		ev.Sequence, ev.RuntimeId = 0, ""
		if ev.EventId == "" {
			ev.EventId = ids.New(ids.Event)
		}
		if ev.Timestamp == nil {
			ev.Timestamp = timestamppb.New(a.now())
		}
		if err := events.Validate(ev); err != nil {
			var inv *events.Invalid
			if errors.As(err, &inv) {
				return nil, fault.Invalid(field+"."+inv.Field, "%s", inv.Reason)
			}
			return nil, err
		}
	}
	res, err := a.exec.Execute(ctx, threadAgg(c.Tenant, tu.SessionId, tu.ThreadId), func(ctx context.Context, last uint64) ([]*eventsv1.RuntimeEvent, error) {
		th, err := a.thread(ctx, c, tu.SessionId, tu.ThreadId)
		if err != nil {
			return nil, err
		}
		cur, err := a.turn(ctx, c, turnID)
		if err != nil {
			return nil, err
		}
		if fence != nil {
			if err := fence(ctx, cur, last); err != nil {
				return nil, err
			}
		}
		return domain.DecideReport(th, cur, reported)
	})
	if err != nil {
		return nil, err
	}
	out := &controlv1.ReportEventsResponse{Sequence: res.Sequence}
	for _, ap := range res.Appended {
		out.EventIds = append(out.EventIds, ap.EventID)
	}
	return out, nil
}

package app

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// ReportEvents appends a worker's facts for one known turn: step facts
// (model, reasoning, tool, process, output, context, artifact, run status)
// and the turn's own lifecycle. Step facts go to the turn's subject and
// never contend with commands on the thread; lifecycle facts are decided on
// the thread (domain.DecidesThread). The scope comes from the turn; what the
// class requires beyond it (a tool call id for tool facts) must be given.
//
// fence, when set, runs inside every decision (again on every retry), on
// the thread's state as the writer holds it, and refuses reports the
// turn's current run may not make.
func (a *App) ReportEvents(ctx context.Context, c Caller, req *controlv1.ReportEventsRequest, fence Fence) (*controlv1.ReportEventsResponse, error) {
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
	// Where the turn lives: the events say (workers send it), else the
	// read model knows (the turn was claimed, so it is there or nearly).
	session, thread := reported[0].GetSessionId(), reported[0].GetThreadId()
	if session == "" || thread == "" {
		tu, err := a.turn(ctx, c, turnID)
		if err != nil {
			return nil, err
		}
		session, thread = tu.SessionId, tu.ThreadId
	}
	for i, ev := range reported {
		field := fmt.Sprintf("events[%d]", i)
		if (ev.GetSessionId() != "" && ev.GetSessionId() != session) || (ev.GetThreadId() != "" && ev.GetThreadId() != thread) {
			return nil, fault.Invalid(field, "%s", "session or thread id differs from the turn's")
		}
		ev.SessionId, ev.ThreadId, ev.TenantId = session, thread, c.Tenant
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
	out := &controlv1.ReportEventsResponse{}
	// A retried report (the worker keeps its event ids) whose first attempt
	// landed whole: its last decision on the thread is there, and so is
	// everything before it (runs are appended in order). Only when that
	// fact ends the report: step facts after it may not have landed (the
	// first attempt broke between its appends), and the runs below append
	// them, each run absorbing what already landed.
	if last := lastThreadFact(reported); last != nil && last == reported[len(reported)-1] {
		st, err := a.w.Load(ctx, threadAgg(c.Tenant, session, thread))
		if err != nil {
			return nil, err
		}
		if seq, ok := st.Seen(last.GetEventId()); ok {
			for _, ev := range reported {
				out.EventIds = append(out.EventIds, ev.GetEventId())
			}
			out.Sequence = seq
			return out, nil
		}
	}
	// Runs of consecutive facts of one kind, appended in order: what the
	// thread decides on at its expected sequence, the rest on the turn's
	// subject with no expectation.
	for start := 0; start < len(reported); {
		onThread := domain.DecidesThread(reported[start])
		end := start + 1
		for end < len(reported) && domain.DecidesThread(reported[end]) == onThread {
			end++
		}
		run := reported[start:end]
		start = end
		if onThread {
			res, err := a.w.Execute(ctx, threadAgg(c.Tenant, session, thread), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
				th, err := threadIn(ctx, st, c, session, thread)
				if err != nil {
					return nil, err
				}
				cur, err := turnIn(ctx, st, c, turnID)
				if err != nil {
					return nil, err
				}
				if allSeen(st, run) {
					return nil, nil // a retry of a landed run
				}
				if fence != nil {
					if err := fence(ctx, st, cur); err != nil {
						return nil, err
					}
				}
				return domain.DecideReport(th, cur, run)
			})
			if err != nil {
				return nil, err
			}
			if len(res.Appended) == 0 {
				for _, ev := range run {
					out.EventIds = append(out.EventIds, ev.GetEventId())
				}
			}
			for _, ap := range res.Appended {
				out.EventIds = append(out.EventIds, ap.EventID)
			}
			out.Sequence = res.Sequence
			continue
		}
		evs, err := a.decideFacts(ctx, c, session, thread, turnID, run, fence)
		if err != nil {
			return nil, err
		}
		seq, err := a.appendFacts(ctx, turnAgg(c.Tenant, session, turnID), evs)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			out.EventIds = append(out.EventIds, ev.GetEventId())
		}
		out.Sequence = seq
	}
	return out, nil
}

// Fence refuses reports the turn's current run may not make (lease
// fencing), deciding on the thread's state as the writer holds it.
type Fence func(ctx context.Context, st command.State, tu *controlv1.Turn) error

// decideFacts checks step facts against the thread as this process holds
// it (the turn exists and has not ended). A refusal is confirmed on the
// log's state first: the held state may predate the turn.
func (a *App) decideFacts(ctx context.Context, c Caller, session, thread, turnID string, run []*eventsv1.RuntimeEvent, fence Fence) ([]*eventsv1.RuntimeEvent, error) {
	agg := threadAgg(c.Tenant, session, thread)
	decide := func(st command.State) ([]*eventsv1.RuntimeEvent, error) {
		th, err := threadIn(ctx, st, c, session, thread)
		if err != nil {
			return nil, err
		}
		cur, err := turnIn(ctx, st, c, turnID)
		if err != nil {
			return nil, err
		}
		if fence != nil {
			if err := fence(ctx, st, cur); err != nil {
				return nil, err
			}
		}
		return domain.DecideReport(th, cur, run)
	}
	st, err := a.w.Load(ctx, agg)
	if err != nil {
		return nil, err
	}
	evs, err := decide(st)
	if err == nil {
		return evs, nil
	}
	if _, refused := fault.As(err); !refused {
		return nil, err
	}
	if st, err = a.w.Refresh(ctx, agg); err != nil {
		return nil, err
	}
	return decide(st)
}

// appendFacts appends step facts to their turn's subject, all published
// before any acknowledgement is awaited, in order, with their event ids as
// de-duplication ids: a retried report appends nothing twice. It answers
// the sequence of the last one.
func (a *App) appendFacts(ctx context.Context, agg eventlog.Aggregate, evs []*eventsv1.RuntimeEvent) (uint64, error) {
	entries := make([]eventlog.Entry, len(evs))
	for i, ev := range evs {
		entries[i] = eventlog.Entry{Aggregate: agg, Expect: eventlog.Any, Event: ev}
	}
	results, err := a.Log.AppendBatch(ctx, entries)
	if err != nil {
		return 0, err
	}
	var last uint64
	for _, r := range results {
		if r.Err != nil {
			return 0, r.Err
		}
		last = max(last, r.Sequence)
	}
	return last, nil
}

// lastThreadFact is the last reported event decided on the thread.
func lastThreadFact(evs []*eventsv1.RuntimeEvent) *eventsv1.RuntimeEvent {
	for i := len(evs) - 1; i >= 0; i-- {
		if domain.DecidesThread(evs[i]) {
			return evs[i]
		}
	}
	return nil
}

// allSeen says whether every event is among the thread's recent events.
func allSeen(st command.State, evs []*eventsv1.RuntimeEvent) bool {
	for _, ev := range evs {
		if _, ok := st.Seen(ev.GetEventId()); !ok {
			return false
		}
	}
	return true
}

package agui

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentruntime/agentruntime/pkg/clienttool"
	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// runStream writes one run: RUN_STARTED, the thread's state, the turn's
// events from the plan's start, and RUN_FINISHED or RUN_ERROR.
type runStream struct {
	h     *Handler
	in    *run
	p     *plan
	w     http.ResponseWriter
	enc   encoder
	flush *http.ResponseController
	tr    *translator
	open  *tracker
	// live is set once the events before the plan's after are behind.
	live bool
	// last is the place of the last event sent, for the cursor of the
	// events a run makes up (reopened items).
	last  position
	state map[string]any
}

func (s *runStream) serve(ctx context.Context, sub grpc.ServerStreamingClient[controlv1.SubscribeEventsResponse]) error {
	s.live = s.p.after == nil
	// Before the first event, a cursor says: everything before from seen.
	s.last = position{seq: s.p.from - 1, k: lastOfEvent}
	if s.p.after != nil {
		s.last = *s.p.after
	}
	s.state = stateOf(s.p.state)
	meta := map[string]any{"turnId": s.p.turnID, "sessionId": s.in.sessionID}
	// The extension this server offers beyond AG-UI 1.0 (docs/ag-ui.md).
	start := map[string]any{"turnId": s.p.turnID, "sessionId": s.in.sessionID,
		"extensions": map[string]any{"reconnect": "forwardedProps.agentruntime.cursor or Last-Event-ID: the cursor of the last event received"}}
	if err := s.send(Event{Type: RunStarted, ThreadID: s.in.threadID, RunID: s.in.runID}, start, s.last); err != nil {
		return err
	}
	if err := s.send(Event{Type: StateSnapshot, Snapshot: s.state}, meta, s.last); err != nil {
		return err
	}
	for {
		resp, err := sub.Recv()
		if err != nil {
			return s.fail(err)
		}
		switch item := resp.GetItem().(type) {
		case *controlv1.SubscribeEventsResponse_Heartbeat:
			if err := s.enc.keepalive(s.w); err != nil {
				return err
			}
			_ = s.flush.Flush()
		case *controlv1.SubscribeEventsResponse_Gap:
			gap, _ := protojson.Marshal(item.Gap)
			if err := s.send(Event{Type: Custom, Name: "agentruntime.gap", Value: json.RawMessage(gap)}, nil, s.last); err != nil {
				return err
			}
		case *controlv1.SubscribeEventsResponse_Event:
			ev := item.Event
			if ev.GetTurnId() != s.p.turnID {
				continue
			}
			done, err := s.event(ctx, ev)
			if err != nil || done {
				return err
			}
		}
	}
}

// event sends what one runtime event of the turn becomes; done when it
// ended the run.
func (s *runStream) event(ctx context.Context, ev *eventsv1.RuntimeEvent) (done bool, err error) {
	seq := ev.GetSequence()
	checks := s.p.after == nil || seq >= s.p.after.seq
	var out []Event
	switch ev.GetType() {
	case events.TypeTurnStarted, events.TypeActionResolved:
		s.tr.clientCall(ev)
		if checks {
			if out, err = s.stateDelta(ctx, seq); err != nil {
				return false, err
			}
		}
	case events.TypeActionRequired:
		s.tr.clientCall(ev)
		if !checks || s.p.answered[ev.GetActionId()] {
			break
		}
		read, err := s.read(ctx, seq)
		if err != nil {
			return false, err
		}
		interrupts := s.interrupts(read, ev.GetActionId())
		if len(interrupts) == 0 {
			break
		}
		out = append(s.diff(read), s.open.closeAll()...)
		return true, s.sendAll(ev, append(out, s.waiting(interrupts)))
	case events.TypeTurnCompleted, events.TypeTurnFailed:
		read, err := s.read(ctx, seq)
		if err != nil {
			return false, err
		}
		out = append(s.diff(read), s.open.closeAll()...)
		return true, s.sendAll(ev, append(out, s.end(ev)))
	default:
		out = s.tr.translate(ev)
	}
	return false, s.sendAll(ev, out)
}

// waiting is the last event of a run whose turn waits for the front end:
// the calls of its front-end tools when that is all it waits for (the
// front end runs them and answers with tool messages), else interrupts.
func (s *runStream) waiting(interrupts []Interrupt) Event {
	fin := Event{Type: RunFinished, ThreadID: s.in.threadID, RunID: s.in.runID, Outcome: &Outcome{Type: "interrupt", Interrupts: interrupts}}
	calls := []string{}
	for _, in := range interrupts {
		if in.Reason != clienttool.ActionType {
			return fin
		}
		calls = append(calls, in.ToolCallID)
	}
	fin.Outcome = &Outcome{Type: "success", PendingToolCallIDs: calls}
	fin.Result = map[string]any{"turnId": s.p.turnID, "pendingToolCallIds": calls}
	return fin
}

// end is the run's last event for the turn's end.
func (s *runStream) end(ev *eventsv1.RuntimeEvent) Event {
	if c := ev.GetTurnCompleted(); c != nil {
		return Event{Type: RunFinished, ThreadID: s.in.threadID, RunID: s.in.runID,
			Outcome: &Outcome{Type: "success", PendingToolCallIDs: []string{}},
			Result:  map[string]any{"turnId": ev.GetTurnId(), "summary": c.GetSummary(), "stopReason": c.GetStopReason()}}
	}
	f := ev.GetTurnFailed()
	if f.GetOutcome() == eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED {
		return Event{Type: RunFinished, ThreadID: s.in.threadID, RunID: s.in.runID, Outcome: &Outcome{Type: "cancelled"}}
	}
	code := f.GetCategory()
	if f.GetOutcome() == eventsv1.TurnOutcome_TURN_OUTCOME_TIMED_OUT {
		code = "timed_out"
	}
	msg := f.GetMessage()
	if msg == "" {
		msg = "the turn failed"
	}
	return Event{Type: RunError, Message: msg, Code: code}
}

// sendAll sends the events made of ev, skipping those at or before the
// plan's after (seen by an earlier run) but keeping track of what they
// open. A run's last event is always sent: a run ends. State events depend
// on when the read model was read, not on the log alone: they take no
// place of their own (their cursor is the event before them), so the
// places of the others are the same in every run.
func (s *runStream) sendAll(ev *eventsv1.RuntimeEvent, out []Event) error {
	meta := eventMeta(ev)
	k := 0
	for _, e := range out {
		at := position{seq: ev.GetSequence(), k: k}
		final := e.Type == RunFinished || e.Type == RunError
		seen := !s.live && !final && (at.seq < s.p.after.seq || (at.seq == s.p.after.seq && k <= s.p.after.k))
		state := e.Type == StateDelta || e.Type == StateSnapshot
		if seen {
			if !state {
				s.open.apply(e)
				k++
			}
			continue
		}
		if err := s.goLive(meta); err != nil {
			return err
		}
		if state {
			if err := s.send(e, meta, s.last); err != nil {
				return err
			}
			continue
		}
		k++
		s.open.apply(e)
		if err := s.send(e, meta, at); err != nil {
			return err
		}
		s.last = at
	}
	return nil
}

// goLive reopens, once, what the events before the plan's after left
// open: already open as far as the tracker knows, so sent, not applied.
func (s *runStream) goLive(meta map[string]any) error {
	if s.live {
		return nil
	}
	s.live = true
	for _, r := range s.open.reopen() {
		if err := s.send(r, meta, s.last); err != nil {
			return err
		}
	}
	return nil
}

// send writes one event with the runtime's ids and the cursor that
// resumes after it in its metadata.
func (s *runStream) send(e Event, meta map[string]any, at position) error {
	m := map[string]any{"cursor": cursor{turnID: s.p.turnID, from: s.p.from, seq: at.seq, k: at.k}.String()}
	for k, v := range meta {
		m[k] = v
	}
	e.Metadata = map[string]any{"agentruntime": m}
	if e.Timestamp == 0 {
		if ts, ok := meta["timestamp"].(int64); ok {
			e.Timestamp = ts
		} else {
			e.Timestamp = time.Now().UnixMilli()
		}
	}
	delete(m, "timestamp")
	if err := s.enc.event(s.w, e, m["cursor"].(string)); err != nil {
		return err
	}
	return s.flush.Flush()
}

// fail ends the run on a broken subscription: RUN_ERROR with the cursor a
// reconnect resumes from.
func (s *runStream) fail(err error) error {
	st := status.Convert(err)
	_ = s.send(Event{Type: RunError, Message: st.Message(), Code: strings.ToLower(st.Code().String())}, nil, s.last)
	return err
}

func eventMeta(ev *eventsv1.RuntimeEvent) map[string]any {
	m := map[string]any{"type": ev.GetType(), "sequence": ev.GetSequence(), "eventId": ev.GetEventId()}
	if ts := ev.GetTimestamp(); ts != nil {
		m["timestamp"] = ts.AsTime().UnixMilli()
	}
	for k, v := range map[string]string{"turnId": ev.GetTurnId(), "runId": ev.GetRunId(), "stepId": ev.GetStepId(),
		"toolCallId": ev.GetToolCallId(), "actionId": ev.GetActionId(), "traceId": ev.GetTraceId()} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// interrupts are the turn's pending actions as AG-UI interrupts, when the
// one just required is among them (an action answered before the run saw
// it does not interrupt).
func (s *runStream) interrupts(read *controlv1.ThreadRead, actionID string) []Interrupt {
	pending := read.GetPendingActions()
	if findAction(pending, actionID) == nil {
		return nil
	}
	var out []Interrupt
	for _, a := range pending {
		if a.GetTurnId() != s.p.turnID {
			continue
		}
		in := Interrupt{ID: a.GetActionId(), Reason: a.GetActionType(), Message: a.GetPrompt(), ToolCallID: a.GetToolCallId(),
			ResponseSchema: responseSchema(a),
			Metadata: map[string]any{"agentruntime": map[string]any{"actionId": a.GetActionId(), "actionType": a.GetActionType(),
				"turnId": a.GetTurnId(), "decisions": a.GetDecisions(), "decisionOnTimeout": a.GetDecisionOnTimeout(), "context": a.GetContext()}}}
		if a.GetExpiresAt() != nil {
			in.ExpiresAt = a.GetExpiresAt().AsTime().UTC().Format(time.RFC3339Nano)
		}
		out = append(out, in)
	}
	return out
}

// responseSchema says what a resume's payload is: a decision the action
// offers, with the action's structured response when it asks for one.
func responseSchema(a *controlv1.Action) map[string]any {
	props := map[string]any{"decision": map[string]any{"type": "string", "enum": a.GetDecisions()}}
	if a.GetJsonSchema() != "" {
		var schema map[string]any
		if json.Unmarshal([]byte(a.GetJsonSchema()), &schema) == nil {
			props["payload"] = schema
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": []string{"decision"}}
}

func (s *runStream) read(ctx context.Context, seq uint64) (*controlv1.ThreadRead, error) {
	resp, err := s.h.control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: s.in.sessionID, ThreadId: s.in.threadID, MinSequence: max(seq, s.p.floor)})
	if err != nil {
		return nil, s.fail(err)
	}
	return resp.GetThread(), nil
}

func (s *runStream) stateDelta(ctx context.Context, seq uint64) ([]Event, error) {
	read, err := s.read(ctx, seq)
	if err != nil {
		return nil, err
	}
	return s.diff(read), nil
}

// diff is a STATE_DELTA from the state sent last to read (top-level
// members replaced, added or removed), or nothing when it is the same.
func (s *runStream) diff(read *controlv1.ThreadRead) []Event {
	next := stateOf(read)
	var ops []PatchOp
	keys := make([]string, 0, len(next))
	for k := range next {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, _ := json.Marshal(next[k])
		old, had := s.state[k]
		if !had {
			ops = append(ops, PatchOp{Op: "add", Path: "/" + pointerToken(k), Value: v})
			continue
		}
		if o, _ := json.Marshal(old); string(o) != string(v) {
			ops = append(ops, PatchOp{Op: "replace", Path: "/" + pointerToken(k), Value: v})
		}
	}
	for k := range s.state {
		if _, ok := next[k]; !ok {
			ops = append(ops, PatchOp{Op: "remove", Path: "/" + pointerToken(k)})
		}
	}
	s.state = next
	if len(ops) == 0 {
		return nil
	}
	return []Event{{Type: StateDelta, Delta: ops}}
}

// stateOf is the thread read model as JSON (the API's own JSON names).
func stateOf(read *controlv1.ThreadRead) map[string]any {
	state := map[string]any{}
	raw, err := protojson.Marshal(read)
	if err == nil {
		_ = json.Unmarshal(raw, &state)
	}
	return state
}

func pointerToken(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func joinQuoted(v []string) string {
	q := make([]string, len(v))
	for i, s := range v {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

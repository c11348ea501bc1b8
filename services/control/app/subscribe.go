package app

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/fanout"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/services/control/domain"
	rm "github.com/agentruntime/agentruntime/services/control/projector"
)

// SubscriberLimits bound what one subscription may cost.
type SubscriberLimits struct {
	// Buffer bounds the matching events held in memory for one subscriber.
	// When it is full the hub lets the subscriber go (it never waits) and
	// the subscriber catches up from the log at its own pace: the backlog
	// stays in JetStream, not in this process.
	Buffer int
	// Stall is how long one send to the subscriber may block before the
	// stream is ended with a resumable cursor: a subscriber that takes
	// nothing for this long is cut, one that keeps up however slowly is
	// not.
	Stall time.Duration
}

// DefaultSubscriberLimits apply unless SetSubscriberLimits says otherwise.
var DefaultSubscriberLimits = SubscriberLimits{Buffer: 1024, Stall: 10 * time.Second}

// SetSubscriberLimits changes the limits of subscriptions started from now
// on; running ones keep theirs.
func (a *App) SetSubscriberLimits(l SubscriberLimits) { a.limits.Store(&l) }

func (a *App) subscriberLimits() SubscriberLimits {
	if l := a.limits.Load(); l != nil {
		return *l
	}
	return DefaultSubscriberLimits
}

// DefaultHeartbeat is the idle-stream heartbeat interval.
const DefaultHeartbeat = 15 * time.Second

// Subscribe streams the caller's events through send until ctx ends or the
// subscriber stalls. It rides the process's fan-out hub (ADR 0006): no
// JetStream consumer per subscriber. Memory per subscriber is bounded by
// the limits' Buffer; a subscriber that falls behind catches up from the
// log; one whose transport takes nothing for the limits' Stall is cut with
// ResourceExhausted and the sequence to resume from, and resuming there
// yields no gap and no duplicate. A cursor older than the log's first
// sequence gets the session's snapshot and a snapshot.repaired fact first.
func (a *App) Subscribe(ctx context.Context, c Caller, req *controlv1.SubscribeEventsRequest, send func(*controlv1.SubscribeEventsResponse) error) error {
	limits := a.subscriberLimits()
	// A send that blocks for Stall is a stalled subscriber.
	stalled := false
	timedSend := func(m *controlv1.SubscribeEventsResponse) error {
		t0 := time.Now()
		err := send(m)
		if time.Since(t0) >= limits.Stall {
			stalled = true
		}
		return err
	}
	filter := fanout.Filter{Tenant: c.Tenant, Session: req.GetSessionId(), Key: filterKey(req),
		Match: func(ev *eventsv1.RuntimeEvent) bool { return matches(req, ev) }}
	from := fanout.Now
	switch req.GetStart() {
	case controlv1.StartFrom_START_FROM_SEQUENCE:
		first, _, err := a.Log.Bounds(ctx)
		if err != nil {
			return err
		}
		from = max(req.GetFromSequence(), 1)
		if first <= from {
			break
		}
		if req.GetSessionId() == "" {
			// No snapshot covers a whole tenant: say what is gone.
			gap := &controlv1.Gap{RequestedSequence: from, FirstAvailableSequence: first}
			if err := timedSend(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Gap{Gap: gap}}); err != nil {
				return err
			}
			from = first
			break
		}
		snap, repaired, err := a.repair(ctx, c, req, from, first)
		if err != nil {
			return err
		}
		if err := timedSend(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Snapshot{Snapshot: snap}}); err != nil {
			return err
		}
		if err := timedSend(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Event{Event: repaired}}); err != nil {
			return err
		}
		// The repair fact is after the snapshot in the log; it was sent.
		from = snap.Sequence + 1
		filter.Key += "\x00" + repaired.GetEventId()
		filter.Match = func(ev *eventsv1.RuntimeEvent) bool {
			return ev.GetEventId() != repaired.GetEventId() && matches(req, ev)
		}
	case controlv1.StartFrom_START_FROM_SNAPSHOT:
		snap, err := a.snapshot(ctx, c, req)
		if err != nil {
			return err
		}
		if err := timedSend(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Snapshot{Snapshot: snap}}); err != nil {
			return err
		}
		from = snap.Sequence + 1
	}
	sub, err := a.Hub.Subscribe(ctx, filter, from, fanout.Options{Buffer: limits.Buffer})
	if err != nil {
		return err
	}
	defer sub.Close()
	// A first heartbeat says the subscription is live: a client that
	// starts from now and then acts will see its own events.
	if err := timedSend(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Heartbeat{Heartbeat: &controlv1.Heartbeat{Time: timestamppb.New(a.now())}}}); err != nil {
		return err
	}
	heartbeat := DefaultHeartbeat
	if req.GetHeartbeat() != nil {
		heartbeat = req.GetHeartbeat().AsDuration()
	}
	for !stalled {
		recs, err := sub.Next(ctx, heartbeat)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, fanout.ErrClosed):
			resume := strconv.FormatUint(sub.From(), 10)
			return &fault.Error{Kind: fault.KindUnavailable, Reason: "SERVER_SHUTTING_DOWN", RetryAfter: time.Second,
				Message: "the server is shutting down; resubscribe from sequence " + resume, Metadata: map[string]string{"resume_from_sequence": resume}}
		case err != nil:
			return err
		case len(recs) == 0:
			hb := &controlv1.Heartbeat{Time: timestamppb.New(a.now()), Sequence: sub.From() - 1}
			if err := timedSend(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Heartbeat{Heartbeat: hb}}); err != nil {
				return err
			}
		}
		for _, rec := range recs {
			if err := timedSend(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Event{Event: rec.Event}}); err != nil {
				return err
			}
		}
	}
	// Everything taken from the hub was sent; the client resumes right
	// after it.
	resume := strconv.FormatUint(sub.From(), 10)
	return fault.Exhausted("SUBSCRIBER_TOO_SLOW",
		"the subscriber took nothing for "+limits.Stall.String()+"; resubscribe from sequence "+resume,
		0, map[string]string{"resume_from_sequence": resume})
}

// filterKey names what matches selects for req: subscriptions with the
// same one share the hub's filtering.
func filterKey(req *controlv1.SubscribeEventsRequest) string {
	return req.GetThreadId() + "\x00" + req.GetTaskId() + "\x00" + strings.Join(req.GetTypePrefixes(), "\x01")
}

// matches applies the filters the subject cannot express.
func matches(req *controlv1.SubscribeEventsRequest, ev *eventsv1.RuntimeEvent) bool {
	// A subagent's outcome on its child thread belongs to its parent's
	// thread too: the spec has it visible without reading the child.
	if t := req.GetThreadId(); t != "" && ev.GetThreadId() != t &&
		!(strings.HasPrefix(ev.GetType(), "subagent.") && ev.GetRefs()[domain.ParentThreadRef] == t) {
		return false
	}
	if t := req.GetTaskId(); t != "" && ev.GetTaskId() != t {
		return false
	}
	if p := req.GetTypePrefixes(); len(p) > 0 && !slices.ContainsFunc(p, func(prefix string) bool { return strings.HasPrefix(ev.GetType(), prefix) }) {
		return false
	}
	return true
}

// snapshot is the read model a snapshot-first subscription starts with,
// and the sequence it covers: every event after it follows.
func (a *App) snapshot(ctx context.Context, c Caller, req *controlv1.SubscribeEventsRequest) (*controlv1.Snapshot, error) {
	if req.GetSessionId() == "" {
		return nil, fault.Invalid("session_id", "%s", "required to start from a snapshot")
	}
	// The checkpoint is read before the documents: the documents are then
	// at least that fresh, so starting after it loses nothing.
	covered, err := a.Store.Checkpoint(ctx, rm.Name)
	if err != nil {
		return nil, err
	}
	snap := &controlv1.Snapshot{Sequence: covered}
	// A session a command just created may not be folded yet: lookup
	// waits for the head once before NotFound.
	s, ok, err := lookup(ctx, a, func() (*controlv1.Session, bool, error) {
		return rm.Session(ctx, a.Store, c.Tenant, req.GetSessionId())
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &fault.Error{Kind: fault.KindNotFound, Resource: "session", ID: req.GetSessionId(), Message: "session " + req.GetSessionId() + " not found"}
	}
	snap.Session = s
	if t := req.GetThreadId(); t != "" {
		if snap.Thread, err = a.threadRead(ctx, c, req.GetSessionId(), t); err != nil {
			return nil, err
		}
	}
	return snap, nil
}

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
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
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
// ResourceExhausted and where to resume, and resuming there yields no gap
// and no duplicate. A session's subscription resumes from a sequence of
// the session's partition; a cursor older than its first sequence gets the
// session's snapshot and a snapshot.repaired fact first. A subscription
// across sessions reads every partition of the log and resumes from the
// cursor sent with each event and heartbeat (ADR 0013 §3); a partition
// whose requested history is gone gets a Gap.
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
	session := req.GetSessionId()
	across := session == ""
	filter := fanout.Filter{Tenant: c.Tenant, Session: session, Key: filterKey(req),
		Match: func(ev *eventsv1.RuntimeEvent) bool { return matches(req, ev) }}
	at, err := a.resumeAt(req)
	if err != nil {
		return err
	}
	from := fanout.Now
	switch {
	case at != nil:
		// Across sessions from a cursor (or the start): no snapshot covers
		// a whole tenant, so say what is gone.
		if at, err = a.gaps(ctx, c.Tenant, at, timedSend); err != nil {
			return err
		}
	case req.GetStart() == controlv1.StartFrom_START_FROM_SEQUENCE:
		// The tenant's own retention (eventlog.KeepTenants) may have
		// discarded its events past the stream's first.
		first, err := a.Log.Of(c.Tenant, session).FirstOf(ctx, c.Tenant)
		if err != nil {
			return err
		}
		from = max(req.GetFromSequence(), 1)
		if first <= a.firstAtOrAfter(c.Tenant, session, from) {
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
	case req.GetStart() == controlv1.StartFrom_START_FROM_SNAPSHOT:
		snap, err := a.snapshot(ctx, c, req)
		if err != nil {
			return err
		}
		if err := timedSend(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Snapshot{Snapshot: snap}}); err != nil {
			return err
		}
		from = snap.Sequence + 1
	}
	opts := fanout.Options{Buffer: limits.Buffer}
	var sub *fanout.Subscription
	if at != nil {
		sub, err = a.Hub.SubscribeAt(ctx, filter, at, opts)
	} else {
		sub, err = a.Hub.Subscribe(ctx, filter, from, opts)
	}
	if err != nil {
		return err
	}
	defer sub.Close()
	// The cursor of a subscription across sessions goes with each event and
	// heartbeat; a session's subscription resumes from its sequence.
	cursor := func(c fanout.Cursor) string {
		if !across {
			return ""
		}
		return c.String()
	}
	// One sequence says where a subscription is when it reads one
	// partition (a session's, or any at P = 1).
	single := !across || a.Log.Partitions() == 1
	// A first heartbeat says the subscription is live: a client that
	// starts from now and then acts will see its own events.
	if err := timedSend(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Heartbeat{Heartbeat: &controlv1.Heartbeat{Time: timestamppb.New(a.now())}},
		Cursor: cursor(sub.Cursor())}); err != nil {
		return err
	}
	heartbeat := DefaultHeartbeat
	if req.GetHeartbeat() != nil {
		heartbeat = req.GetHeartbeat().AsDuration()
	}
	for !stalled {
		// Each event's cursor is this one moved past it: a client cut in
		// the middle of a batch resumes right after the event it got last.
		var at fanout.Cursor
		if across {
			at = sub.Cursor()
		}
		recs, err := sub.Next(ctx, heartbeat)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, fanout.ErrClosed):
			where, meta := resumeFrom(sub, across, single)
			return &fault.Error{Kind: fault.KindUnavailable, Reason: domain.ReasonServerShuttingDown, RetryAfter: time.Second,
				Message: "the server is shutting down; resubscribe from " + where, Metadata: meta}
		case err != nil:
			return err
		case len(recs) == 0:
			hb := &controlv1.Heartbeat{Time: timestamppb.New(a.now())}
			if single {
				hb.Sequence = sub.From() - 1
			}
			if err := timedSend(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Heartbeat{Heartbeat: hb}, Cursor: cursor(sub.Cursor())}); err != nil {
				return err
			}
		}
		for _, rec := range recs {
			m := &controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Event{Event: rec.Event}}
			if across {
				at.Advance(rec.Event.GetSequence())
				m.Cursor = at.String()
			}
			if err := timedSend(m); err != nil {
				return err
			}
		}
	}
	// Everything taken from the hub was sent; the client resumes right
	// after it.
	where, meta := resumeFrom(sub, across, single)
	return fault.Exhausted(domain.ReasonSubscriberTooSlow,
		"the subscriber took nothing for "+limits.Stall.String()+"; resubscribe from "+where, 0, meta)
}

// resumeFrom says where a cut subscription resumes, for the message and
// the error's metadata: resume_from_sequence when one sequence says it,
// resume_cursor for a subscription across sessions.
func resumeFrom(sub *fanout.Subscription, across, single bool) (string, map[string]string) {
	meta := map[string]string{}
	where := ""
	if single {
		seq := strconv.FormatUint(sub.From(), 10)
		meta["resume_from_sequence"] = seq
		where = "sequence " + seq
	}
	if across {
		cur := sub.Cursor().String()
		meta["resume_cursor"] = cur
		if where == "" {
			where = "cursor " + cur
		}
	}
	return where, meta
}

// resumeAt is where a subscription across sessions starts when it starts
// in the past: right after resume_cursor, or from from_sequence (at P = 1)
// or every partition's start; nil when it does not. A cursor is refused
// on a session's subscription, beside another start, or when it is not
// one of this log's; from_sequence past the start across the partitions
// of a partitioned log, which no single sequence orders.
func (a *App) resumeAt(req *controlv1.SubscribeEventsRequest) (fanout.Cursor, error) {
	p := a.Log.Partitions()
	across := req.GetSessionId() == ""
	if text := req.GetResumeCursor(); text != "" {
		switch {
		case !across:
			return nil, fault.Invalid("resume_cursor", "%s", "a session's subscription resumes from from_sequence; resume_cursor resumes a subscription across sessions (no session_id)")
		case req.GetStart() != controlv1.StartFrom_START_FROM_UNSPECIFIED && req.GetStart() != controlv1.StartFrom_START_FROM_SEQUENCE:
			return nil, fault.Invalid("resume_cursor", "given with start %s: the cursor is where the subscription starts (leave start unset or START_FROM_SEQUENCE)", req.GetStart())
		case req.GetFromSequence() != 0:
			return nil, fault.Invalid("resume_cursor", "%s", "given with from_sequence: give one of them")
		}
		at, err := fanout.ParseCursor(text)
		if err != nil {
			return nil, fault.Invalid("resume_cursor", "%s", "not a cursor of this service: give back a SubscribeEventsResponse.cursor as it was received")
		}
		if len(at) != p {
			return nil, fault.Invalid("resume_cursor", "a cursor of %d partition(s), and the log has %d: it is not of this deployment's log; subscribe again without it", len(at), p)
		}
		return at, nil
	}
	if !across || req.GetStart() != controlv1.StartFrom_START_FROM_SEQUENCE {
		return nil, nil
	}
	at := make(fanout.Cursor, p)
	switch from := max(req.GetFromSequence(), 1); {
	case p == 1:
		at[0] = from - 1
	case from > 1:
		return nil, fault.Invalid("from_sequence", "a subscription across sessions reads %d partitions of the log, which no single sequence orders: resume it with resume_cursor (from_sequence 0 or 1 starts every partition from its start)", p)
	}
	return at, nil
}

// gaps tells a subscription across sessions which events its start no
// longer finds in the log (no snapshot covers a whole tenant), one Gap per
// partition that lost some, and moves the start of such a partition to
// its first retained event.
func (a *App) gaps(ctx context.Context, tenant string, at fanout.Cursor, send func(*controlv1.SubscribeEventsResponse) error) (fanout.Cursor, error) {
	p := uint64(len(at))
	for k, view := range a.Log.Views() {
		first, err := view.FirstOf(ctx, tenant)
		if err != nil {
			return nil, err
		}
		from := a.Log.Position(k, at[k]+1)
		if first <= from {
			continue
		}
		gap := &controlv1.Gap{RequestedSequence: from, FirstAvailableSequence: first}
		if err := send(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Gap{Gap: gap}}); err != nil {
			return nil, err
		}
		// first is a position of partition k: its stream sequence is
		// first/p.
		at[k] = first/p - 1
	}
	return at, nil
}

// firstAtOrAfter is the first position of the session's partition at or
// after pos, where a read of the session from pos starts: on a
// partitioned log a sequence the client computed (the last it got plus
// one) is of no partition, so it is compared with the partition's first
// position as this one.
func (a *App) firstAtOrAfter(tenant, session string, pos uint64) uint64 {
	p := uint64(a.Log.Partitions())
	k := uint64(a.Log.Subjects.PartitionOf(tenant, session))
	seq := uint64(1)
	if pos > k {
		seq = max((pos-k+p-1)/p, 1)
	}
	return a.Log.Position(int(k), seq)
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
	// The session's partition's checkpoint: the positions after it are
	// the session's events still to come.
	covered, err := projector.Checkpoint(ctx, a.Log.Of(c.Tenant, req.GetSessionId()), a.Store, readmodel.Name)
	if err != nil {
		return nil, err
	}
	snap := &controlv1.Snapshot{Sequence: covered}
	// A session a command just created may not be folded yet: lookup
	// waits for the head once before NotFound.
	s, ok, err := lookup(ctx, a, func() (*controlv1.Session, bool, error) {
		return readmodel.Session(ctx, a.Store, c.Tenant, req.GetSessionId())
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFoundWith("session", req.GetSessionId(), "session "+req.GetSessionId()+" not found")
	}
	snap.Session = s
	if t := req.GetThreadId(); t != "" {
		if snap.Thread, err = a.threadRead(ctx, c, req.GetSessionId(), t); err != nil {
			return nil, err
		}
	}
	return snap, nil
}

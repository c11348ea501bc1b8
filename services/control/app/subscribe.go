package app

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rm "github.com/agentruntime/agentruntime/services/control/projector"
)

// SubscriberLimits bound what one subscription may cost.
type SubscriberLimits struct {
	// Buffer bounds the matching events held in memory for one subscriber.
	// When it is full the subscription stops reading the log (the backlog
	// stays in JetStream, not in this process) and waits for the subscriber.
	Buffer int
	// Stall is how long a full buffer may wait for the subscriber to take an
	// event before the stream is ended with a resumable cursor: a subscriber
	// that makes no progress for this long is cut, one that keeps up however
	// slowly is not.
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
// subscriber stalls. Memory per subscriber is bounded by the limits' Buffer;
// a subscriber that takes nothing for their Stall is cut off with
// ResourceExhausted and the sequence to resume from, and resuming there
// yields no gap and no duplicate.
func (a *App) Subscribe(ctx context.Context, c Caller, req *controlv1.SubscribeEventsRequest, send func(*controlv1.SubscribeEventsResponse) error) error {
	filter := a.Log.Subjects.Tenant(c.Tenant)
	if s := req.GetSessionId(); s != "" {
		filter = a.Log.Subjects.Session(c.Tenant, s)
	}
	from := eventlog.FromNew
	switch req.GetStart() {
	case controlv1.StartFrom_START_FROM_SEQUENCE:
		first, _, err := a.Log.Bounds(ctx)
		if err != nil {
			return err
		}
		want := max(req.GetFromSequence(), 1)
		if first > want {
			gap := &controlv1.Gap{RequestedSequence: want, FirstAvailableSequence: first}
			if err := send(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Gap{Gap: gap}}); err != nil {
				return err
			}
			want = first
		}
		from = eventlog.FromSequence(want)
	case controlv1.StartFrom_START_FROM_SNAPSHOT:
		snap, err := a.snapshot(ctx, c, req)
		if err != nil {
			return err
		}
		if err := send(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Snapshot{Snapshot: snap}}); err != nil {
			return err
		}
		from = eventlog.FromSequence(snap.Sequence + 1)
	}
	sub, err := a.Log.Subscribe(ctx, []string{filter}, from)
	if err != nil {
		return err
	}
	defer sub.Stop()
	// A first heartbeat says the subscription is live: a client that
	// starts from now and then acts will see its own events.
	if err := send(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Heartbeat{Heartbeat: &controlv1.Heartbeat{Time: timestamppb.New(a.now())}}}); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	limits := a.subscriberLimits()
	buf := make(chan *eventsv1.RuntimeEvent, limits.Buffer)
	overflow := make(chan struct{})
	readErr := make(chan error, 1)
	go func() {
		for {
			rec, err := sub.Next(ctx)
			if err != nil {
				readErr <- err
				return
			}
			if !matches(req, rec.Event) {
				continue
			}
			select {
			case buf <- rec.Event:
				continue
			default:
			}
			stall := time.NewTimer(limits.Stall)
			select {
			case buf <- rec.Event:
				stall.Stop()
			case <-stall.C:
				close(overflow)
				return
			case <-ctx.Done():
				stall.Stop()
				readErr <- ctx.Err()
				return
			}
		}
	}()

	heartbeat := DefaultHeartbeat
	if req.GetHeartbeat() != nil {
		heartbeat = req.GetHeartbeat().AsDuration()
	}
	ticker := time.NewTicker(heartbeat)
	defer ticker.Stop()
	var lastSent uint64
	for {
		select {
		case ev := <-buf:
			if err := send(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Event{Event: ev}}); err != nil {
				return err
			}
			lastSent = ev.GetSequence()
			ticker.Reset(heartbeat)
		case <-ticker.C:
			hb := &controlv1.Heartbeat{Time: timestamppb.New(a.now()), Sequence: lastSent}
			if err := send(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Heartbeat{Heartbeat: hb}}); err != nil {
				return err
			}
		case <-overflow:
			// Deliver what is buffered, then end with the cursor: the
			// client resumes exactly after the last event it received.
			for {
				select {
				case ev := <-buf:
					if err := send(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Event{Event: ev}}); err != nil {
						return err
					}
					lastSent = ev.GetSequence()
					continue
				default:
				}
				break
			}
			resume := strconv.FormatUint(lastSent+1, 10)
			return fault.Exhausted("SUBSCRIBER_TOO_SLOW",
				"the subscriber took no event for "+limits.Stall.String()+" with "+strconv.Itoa(limits.Buffer)+" waiting; resubscribe from sequence "+resume,
				0, map[string]string{"resume_from_sequence": resume})
		case err := <-readErr:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case <-ctx.Done():
			return nil
		}
	}
}

// matches applies the filters the subject cannot express.
func matches(req *controlv1.SubscribeEventsRequest, ev *eventsv1.RuntimeEvent) bool {
	if t := req.GetThreadId(); t != "" && ev.GetThreadId() != t {
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
	s, ok, err := rm.Session(ctx, a.Store, c.Tenant, req.GetSessionId())
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

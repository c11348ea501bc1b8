// How an event becomes a message of the log: its subject, headers and
// de-duplication id, the envelope fields the log stamps, and what a
// publish's failure means.

package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
)

func (l *Log) message(ctx context.Context, agg Aggregate, subject string, ev *eventsv1.RuntimeEvent) (*nats.Msg, error) {
	if ev == nil {
		return nil, fmt.Errorf("%w: nil event", ErrInvalid)
	}
	if err := l.stamp(ctx, agg, ev); err != nil {
		return nil, err
	}
	data, err := proto.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("%w: marshal: %v", ErrInvalid, err)
	}
	return l.envelope(ctx, subject, ev, data), nil
}

// envelope is the message of data on subject, de-duplicated by ev's id
// (the first event of a command message: a command's events land
// together, so its first is in the log exactly when all are).
func (l *Log) envelope(ctx context.Context, subject string, ev *eventsv1.RuntimeEvent, data []byte) *nats.Msg {
	msg := &nats.Msg{Subject: subject, Data: data, Header: make(nats.Header, 6)}
	msg.Header[jetstream.MsgIDHeader] = []string{DedupID(subject, ev.GetEventId())}
	msg.Header[HeaderType] = []string{ev.GetType()}
	msg.Header[HeaderTenant] = []string{ev.GetTenantId()}
	l.cfg.Propagator.Inject(ctx, headerCarrier(msg.Header))
	return msg
}

// DedupID is the JetStream de-duplication id (Nats-Msg-Id) an event is
// published with: its event id scoped to the subject it is appended to,
// which names the tenant, the session and the aggregate. The stream's
// de-duplication window is shared by every tenant of its partition, and
// event ids are caller-choosable (a worker's reported facts keep theirs)
// or derivable (a command's, ids.Derive of its aggregate and key), so a
// bare event id would let one tenant's append be taken for a retry of
// another's and dropped. Scoped, an append de-duplicates only against the
// same event id on the same aggregate: a retried command or report still
// appends nothing twice, and nothing written elsewhere can swallow it.
//
// The id is a header for the window only: nothing reads it back, events
// are read by their envelope, so logs written with other de-duplication
// ids fold the same.
func DedupID(subject, eventID string) string {
	return ids.Derive("dedup", subject, eventID)
}

func (l *Log) stamp(ctx context.Context, agg Aggregate, ev *eventsv1.RuntimeEvent) error {
	if ev.EventId == "" {
		ev.EventId = ids.New(ids.Event)
	}
	if ev.Timestamp == nil {
		ev.Timestamp = timestamppb.Now()
	}
	if ev.SchemaVersion == "" {
		ev.SchemaVersion = events.SchemaVersion
	}
	if ev.RuntimeId == "" {
		ev.RuntimeId = l.cfg.RuntimeID
	}
	switch ev.TenantId {
	case "":
		ev.TenantId = agg.Tenant
	case agg.Tenant:
	default:
		return fmt.Errorf("%w: event tenant %q differs from its aggregate's %q", ErrInvalid, ev.TenantId, agg.Tenant)
	}
	if agg.Session != NoSession {
		switch ev.SessionId {
		case "":
			ev.SessionId = agg.Session
		case agg.Session:
		default:
			return fmt.Errorf("%w: event session %q differs from its aggregate's %q", ErrInvalid, ev.SessionId, agg.Session)
		}
	} else if ev.SessionId != "" {
		// A session-less fact lives in the partition of the tenant's
		// session-less facts; one naming a session would be folded into
		// that session's documents from another partition.
		return fmt.Errorf("%w: event session %q on the session-less aggregate %s", ErrInvalid, ev.SessionId, agg)
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && ev.TraceId == "" {
		ev.TraceId, ev.SpanId = sc.TraceID().String(), sc.SpanID().String()
	}
	// The sequence is the log's to assign; a stale one must not be stored.
	ev.Sequence = 0
	if err := events.Validate(ev); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// recoverDuplicate tells a retried append from a real conflict. JetStream
// checks the expected sequence before de-duplicating, so a retry whose
// first attempt landed fails its (now stale) expectation. If the event id is
// among the aggregate's events after the expected sequence, the append had
// already happened: report that event as a duplicate. Conflicts are rare, so
// the scan costs nothing on the hot path, and unlike the de-duplication
// window it never forgets.
func (l *Log) recoverDuplicate(ctx context.Context, agg Aggregate, expect Expect, eventID string, err error) (Appended, error) {
	if !expect.set || !errors.Is(err, ErrConflict) {
		return Appended{}, err
	}
	found := Appended{}
	_, scanErr := l.whole().Read(ctx, []string{l.Subjects.Aggregate(agg)}, FromSequence(expect.seq+1), func(r *Record) error {
		if r.Event.GetEventId() == eventID {
			found = Appended{EventID: eventID, Sequence: r.Event.Sequence, Duplicate: true}
			return errStopRead
		}
		return nil
	})
	if scanErr != nil && !errors.Is(scanErr, errStopRead) {
		return Appended{}, errors.Join(err, scanErr)
	}
	if found.Sequence == 0 {
		return Appended{}, err
	}
	return found, nil
}

var errStopRead = errors.New("stop read")

func publishError(agg Aggregate, err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		// 10071 on a single replica, 10164 on replicated streams: one conflict.
		case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant:
			return fmt.Errorf("%w: %s: %s", ErrConflict, agg, apiErr.Description)
		}
	}
	return fmt.Errorf("eventlog: append to %s: %w", agg, err)
}

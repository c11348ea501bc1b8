package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/quota"
)

// AppendAtomic writes a command's events to one aggregate all or nothing:
// one JetStream atomic batch (nats-server 2.12+, AllowAtomicPublish) whose
// first message carries the expected last subject sequence and every
// message its de-duplication id (DedupID). The batch lands at
// consecutive sequences or not at all, so no crash, lost connection or
// concurrent writer can leave half a command in the log (ADR 0005,
// "Atomic commands").
// One event is a plain publish (the same guarantee, one message less).
//
// ErrConflict covers every reason to reload and decide again: the expected
// sequence did not hold, or an event of the batch is already in the log (a
// retried command: the decision on the reloaded state sees it).
func (l *Log) AppendAtomic(ctx context.Context, agg Aggregate, expect Expect, evs ...*eventsv1.RuntimeEvent) ([]Appended, error) {
	if len(evs) <= 1 {
		return l.Append(ctx, agg, expect, evs...)
	}
	if err := agg.validate(); err != nil {
		return nil, err
	}
	subject := l.Subjects.Aggregate(agg)
	k := l.aggregatePart(agg)
	seq, err := l.sequenceAt(k, expect.seq)
	if err != nil {
		return nil, err
	}
	if l.slots > 1 {
		msg, err := l.commandMessage(ctx, agg, subject, evs)
		if err != nil {
			return nil, err
		}
		if msg != nil {
			return l.appendCommand(ctx, agg, k, expect, seq, msg, evs)
		}
	}
	msgs := make([]*nats.Msg, len(evs))
	for i, ev := range evs {
		msg, err := l.message(ctx, agg, subject, ev)
		if err != nil {
			return nil, err
		}
		if i == 0 && expect.set {
			msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(seq, 10))
		}
		msgs[i] = msg
	}
	if err := charge(ctx, agg, msgs); err != nil {
		return nil, err
	}
	// No ack of the first message: one round trip for the whole batch.
	// Through an outage the same batch is tried again (outage.go): had it
	// landed, the retry finds its message ids and answers a conflict.
	var ack *jetstreamext.BatchAck
	err = l.retry(ctx, "append to "+agg.String(), func(actx context.Context) error {
		var err error
		ack, err = jetstreamext.PublishMsgBatch(actx, l.js, msgs, jetstreamext.BatchFlowControl{AckFirst: false})
		return err
	})
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return nil, err
		}
		var apiErr *jetstream.APIError
		switch {
		case errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeAtomicDuplicate,
			// A duplicate first message is answered as a plain duplicate
			// publish, which the batch client does not recognise.
			errors.Is(err, jetstreamext.ErrInvalidBatchAck):
			return nil, fmt.Errorf("%w: %s: part of the batch is already in the log", ErrConflict, agg)
		}
		return nil, publishError(agg, err)
	}
	out := make([]Appended, len(evs))
	first := ack.Sequence - uint64(len(evs)) + 1
	for i, ev := range evs {
		out[i] = Appended{EventID: ev.GetEventId(), Sequence: l.lastAt(k, first+uint64(i))}
	}
	return out, nil
}

// appendCommand publishes a command message (slots.go): one publish, one
// acknowledgement, the expected subject sequence on it. A duplicate (its
// first event's id already on the aggregate: a retried command) is a
// conflict to reload on, as a batch with a landed event is.
func (l *Log) appendCommand(ctx context.Context, agg Aggregate, k int, expect Expect, seq uint64, msg *nats.Msg, evs []*eventsv1.RuntimeEvent) ([]Appended, error) {
	if err := quota.Charge(ctx, agg.Tenant, len(evs), len(msg.Data)); err != nil {
		return nil, err
	}
	var opts []jetstream.PublishOpt
	if expect.set {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(seq))
	}
	ack, err := l.publish(ctx, agg, msg.Subject, expect.set, seq, msg, opts...)
	if err != nil {
		return nil, err
	}
	if ack.Duplicate {
		return nil, fmt.Errorf("%w: %s: the command is already in the log", ErrConflict, agg)
	}
	out := make([]Appended, len(evs))
	for i, ev := range evs {
		out[i] = Appended{EventID: ev.GetEventId(), Sequence: l.Position(k, l.local(ack.Sequence, i, len(evs)))}
	}
	return out, nil
}

// errCodeAtomicDuplicate: "atomic publish batch contains duplicate message id".
const errCodeAtomicDuplicate jetstream.ErrorCode = 10201

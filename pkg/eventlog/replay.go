package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/synadia-io/orbit.go/jetstreamext"
)

// History returns up to limit events matching filter (one subject of
// Log.Subjects; wildcards allowed) from sequence from on, in stream order,
// with one batch direct get: no consumer is created, so a reader paging
// through history at its own pace costs the server nothing between pages.
// None (and no error) means the log has nothing matching from there on; a
// short batch does not (the server also bounds a batch by bytes).
//
// Direct gets may be answered by any replica of the stream (AllowDirect),
// which can trail the leader by what it has not applied yet: read the
// newest events from a live feed (pkg/fanout keeps them), not from here.
func (l *Log) History(ctx context.Context, filter string, from uint64, limit int) ([]*Record, error) {
	k, err := l.part([]string{filter})
	if err != nil {
		return nil, err
	}
	msgs, err := jetstreamext.GetBatch(ctx, l.js, l.streamName(k), limit,
		jetstreamext.GetBatchSeq(max(l.sequenceFrom(k, from), 1)), jetstreamext.GetBatchSubject(l.Subjects.confine(filter, k)))
	if err != nil {
		return nil, fmt.Errorf("eventlog: history: %w", err)
	}
	var recs []*Record
	for msg, err := range msgs {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			return recs, nil
		}
		if err != nil {
			return recs, fmt.Errorf("eventlog: history: %w", err)
		}
		got, err := l.expand(k, msg.Sequence, msg.Subject, msg.Header, msg.Data, from)
		if err != nil {
			return recs, err
		}
		recs = append(recs, got...)
	}
	// A command message may hold more than the limit asked for: the next
	// page starts after the last event returned, inside it.
	if limit > 0 && len(recs) > limit {
		recs = recs[:limit]
	}
	return recs, nil
}

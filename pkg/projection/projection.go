// Package projection owns the read-model store that every service projects
// the event log into, and the guarantee that makes projections rebuildable:
// the last applied stream sequence is written in the same atomic step as the
// state it covers, so a projector that crashes resumes exactly where its
// state ends, with nothing applied twice and nothing lost.
//
// Two implementations satisfy [Store]: [Redis] for deployments and [Memory]
// for the single-binary dev mode. Both pass the contract suite in
// projectiontest.
//
// Decisions worth knowing:
//
//   - A [Batch] carries its projection's next checkpoint. Apply skips a batch
//     whose sequence is not above the checkpoint, so JetStream redeliveries are
//     harmless and a projector needs no separate de-duplication.
//   - Within a batch, deletes run before puts and index removals before index
//     additions: a key or member named in both ends up present. Callers that
//     coalesce several events into one batch must resolve conflicts themselves.
//   - Range pages by offset. Offsets shift when the index changes between
//     pages; for stable paging over unique scores (sequences, timestamps),
//     continue from the last score seen: Min = math.Nextafter(last, +Inf) is
//     an exclusive bound with no extra API.
//   - WaitFor returns the checkpoint it last saw together with ctx.Err(), so a
//     read that gives up can still say how stale it is instead of failing
//     blind.
//   - Reset is not atomic against concurrent Apply: stop the projector first.
//     It removes checkpoints before state, so an interrupted Reset leaves a
//     projection rebuilding from zero rather than resuming over missing state.
package projection

import (
	"context"
	"errors"
	"fmt"
	"math"
)

var (
	// ErrNotFound reports a document that does not exist.
	ErrNotFound = errors.New("projection: not found")
	// ErrInvalid reports a malformed batch or query: a caller's bug, never a
	// transient condition worth retrying.
	ErrInvalid = errors.New("projection: invalid argument")
	// ErrClosed reports use of a store after Close.
	ErrClosed = errors.New("projection: store closed")
)

// Batch is everything one event, or a run of consecutive events, changes in
// one projection. It is applied atomically together with the projection's
// checkpoint.
type Batch struct {
	// Projection names the read model, e.g. "control.sessions"; it keys the
	// checkpoint.
	Projection string
	// Sequence is the stream sequence this batch brings the projection to.
	// It must be above zero; a batch not above the checkpoint is skipped.
	Sequence uint64
	// Conditional makes the batch apply only when the checkpoint is exactly
	// Base: the state its reads were folded on. A fold of several events
	// read state as of Base; if another writer moved the checkpoint since,
	// applying it would fold part of the range twice. A refused batch is
	// reported with applied=false and a nil error, like a skipped one.
	Conditional bool
	Base        uint64
	// Deletes run before Puts.
	Deletes []string
	Puts    []KV
	// IndexRemoves run before IndexAdds; their scores are ignored.
	IndexRemoves []IndexEntry
	// IndexAdds insert members or move existing ones to a new score.
	IndexAdds []IndexEntry
}

// KV is one document write.
type KV struct {
	Key   string
	Value []byte
}

// IndexEntry is one member of a sorted index.
type IndexEntry struct {
	Index  string
	Member string
	Score  float64
}

// RangeQuery selects index entries. The zero value lists every entry in
// ascending order.
type RangeQuery struct {
	// Min and Max bound the scores inclusively; nil leaves that end open.
	Min, Max *float64
	// Reverse orders by descending score. Equal scores are ordered by member,
	// bytewise, ascending (descending when reversed), as Redis orders them.
	Reverse bool
	// Offset skips that many matching entries.
	Offset int64
	// Limit caps the number of entries returned; 0 means no cap.
	Limit int64
}

// Store is the read-model store a projector writes and a service reads.
// Implementations are safe for concurrent use.
type Store interface {
	// Apply writes the batch and sets its projection's checkpoint to
	// b.Sequence, atomically. A batch whose sequence is not above the
	// checkpoint is skipped entirely and reported with applied=false and a
	// nil error. After an error the batch may or may not have applied (the
	// reply can be lost); retrying it is always safe.
	Apply(ctx context.Context, b Batch) (applied bool, err error)
	// Checkpoint returns the last sequence applied to the projection, 0 when
	// none.
	Checkpoint(ctx context.Context, projection string) (uint64, error)
	// Get returns a document or ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// GetMany returns documents in the order of keys, nil for a missing one.
	// A present empty document is a non-nil empty slice.
	GetMany(ctx context.Context, keys ...string) ([][]byte, error)
	// Range lists the entries of an index selected by q; a missing index is
	// empty.
	Range(ctx context.Context, index string, q RangeQuery) ([]IndexEntry, error)
	// Count returns the number of entries in an index.
	Count(ctx context.Context, index string) (int64, error)
	// WaitFor blocks until the projection's checkpoint reaches seq and
	// returns it. When ctx ends first it returns the checkpoint it last saw
	// and ctx.Err().
	WaitFor(ctx context.Context, projection string, seq uint64) (uint64, error)
	// Reset deletes every document, index and checkpoint of the store so its
	// projections can be rebuilt from the log.
	Reset(ctx context.Context) error
	// Close releases what the store holds and wakes blocked WaitFor calls
	// with ErrClosed. It does not close clients passed in by the caller.
	Close() error
}

func (b *Batch) validate() error {
	if b.Projection == "" {
		return fmt.Errorf("%w: batch names no projection", ErrInvalid)
	}
	if b.Sequence == 0 {
		return fmt.Errorf("%w: batch for %q has sequence 0", ErrInvalid, b.Projection)
	}
	if b.Conditional && b.Base >= b.Sequence {
		return fmt.Errorf("%w: batch for %q from %d to %d goes backwards", ErrInvalid, b.Projection, b.Base, b.Sequence)
	}
	for _, key := range b.Deletes {
		if key == "" {
			return fmt.Errorf("%w: batch for %q deletes an empty key", ErrInvalid, b.Projection)
		}
	}
	for _, kv := range b.Puts {
		if kv.Key == "" {
			return fmt.Errorf("%w: batch for %q puts an empty key", ErrInvalid, b.Projection)
		}
	}
	for _, e := range b.IndexRemoves {
		if e.Index == "" {
			return fmt.Errorf("%w: batch for %q removes from an unnamed index", ErrInvalid, b.Projection)
		}
	}
	for _, e := range b.IndexAdds {
		if e.Index == "" {
			return fmt.Errorf("%w: batch for %q adds to an unnamed index", ErrInvalid, b.Projection)
		}
		// Redis refuses NaN scores, and NaN has no place in an order.
		if math.IsNaN(e.Score) {
			return fmt.Errorf("%w: batch for %q adds %q to %q with a NaN score", ErrInvalid, b.Projection, e.Member, e.Index)
		}
	}
	return nil
}

// bounds returns the inclusive score interval of q.
func (q *RangeQuery) bounds() (lo, hi float64, err error) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if q.Min != nil {
		lo = *q.Min
	}
	if q.Max != nil {
		hi = *q.Max
	}
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return 0, 0, fmt.Errorf("%w: range bound is NaN", ErrInvalid)
	}
	if q.Offset < 0 || q.Limit < 0 {
		return 0, 0, fmt.Errorf("%w: range offset %d and limit %d must not be negative", ErrInvalid, q.Offset, q.Limit)
	}
	return lo, hi, nil
}

func validProjection(projection string) error {
	if projection == "" {
		return fmt.Errorf("%w: empty projection name", ErrInvalid)
	}
	return nil
}

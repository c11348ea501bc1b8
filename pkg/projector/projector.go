// Package projector owns the loop that turns the event log into read models:
// it follows the log from a projection's checkpoint, folds the events it
// holds in batches in memory and writes each batch's changes to a
// projection.Store together with the new checkpoint, in one step
// (docs/adr/0007-batched-facts-and-read-models.md).
//
// A projector follows the log with an ordered consumer started at
// checkpoint+1, not a durable consumer: the checkpoint lives in the store,
// written atomically with the state it covers, so the store alone says where
// to resume. Nothing on the server needs reconciling when the store is wiped
// or restored, and every replica of a service can run the same projector
// against a shared store: Apply skips what another replica applied first,
// and each replica reads state only after applying (or skipping) every
// earlier matching event itself. See docs/adr/0004-projectors.md.
package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

// Projection is one read model built from the log.
type Projection interface {
	// Name keys the projection's checkpoint, e.g. "control.sessions".
	Name() string
	// Filters are the log subjects it reads (eventlog.Subjects); nil reads
	// the whole log.
	Filters() []string
	// Project returns what one event changes. It may read the store: the
	// store holds every earlier event's changes. It must be deterministic
	// (replicas and rebuilds must reach the same state) and must not apply
	// anything itself. An event it does not care about returns an empty
	// batch; the checkpoint still advances.
	Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error)
}

// Run applies the projection until ctx ends. It folds every event the
// consumer already holds (up to the batch bound) in memory over the store,
// and writes the batch with its checkpoint in one step (docs/adr/0007).
// A failure to apply (store or log unavailable) is retried from the
// checkpoint with backoff; an error from Project is a bug in the
// projection: the event is retried likewise, so the read model stops rather
// than skip a fact, and the error is logged.
func Run(ctx context.Context, log *eventlog.Log, store projection.Store, p Projection, logger *slog.Logger, opts ...Option) error {
	return perPartition(ctx, log, p.Name(), func(ctx context.Context, log *eventlog.Log, name string) error {
		p := named{p, name}
		return loop(ctx, log, store, name, p.Filters(), logger, opts, func(ctx context.Context, batch []*eventlog.Record, base uint64) (uint64, error) {
			return ApplyBatch(ctx, store, p, batch, base)
		})
	})
}

// RunAll applies several projections of one store from one consumer: each
// event is read from the log and decoded once for all of them, and each
// batch is folded and written for each projection (concurrently), with its
// own checkpoint. After a restart the consumer starts at the lowest
// checkpoint; a projection skips what it has applied. A rebuild costs one
// replay of the log per process, not one per projection.
func RunAll(ctx context.Context, log *eventlog.Log, store projection.Store, logger *slog.Logger, ps []Projection, opts ...Option) error {
	return perPartition(ctx, log, "", func(ctx context.Context, log *eventlog.Log, suffix string) error {
		mine := make([]Projection, len(ps))
		for i, p := range ps {
			mine[i] = named{p, p.Name() + suffix}
		}
		return runAll(ctx, log, store, logger, mine, opts)
	})
}

func runAll(ctx context.Context, log *eventlog.Log, store projection.Store, logger *slog.Logger, ps []Projection, opts []Option) error {
	names := make([]string, len(ps))
	sets := make([][]string, len(ps))
	for i, p := range ps {
		names[i], sets[i] = p.Name(), p.Filters()
	}
	filters := union(sets...)
	bases := make([]uint64, len(ps))
	start := func(ctx context.Context) (uint64, error) {
		lowest := uint64(math.MaxUint64)
		for i, p := range ps {
			c, err := store.Checkpoint(ctx, p.Name())
			if err != nil {
				return 0, fmt.Errorf("checkpoint %s: %w", p.Name(), err)
			}
			bases[i], lowest = c, min(lowest, c)
		}
		return lowest, nil
	}
	handle := func(ctx context.Context, batch []*eventlog.Record, _ uint64) (uint64, error) {
		errs := make([]error, len(ps))
		var wg sync.WaitGroup
		for i, p := range ps {
			mine := batch
			if f := p.Filters(); f != nil {
				mine = make([]*eventlog.Record, 0, len(batch))
				for _, rec := range batch {
					if matchesAny(f, rec.Subject) {
						mine = append(mine, rec)
					}
				}
			}
			if len(mine) == 0 {
				continue
			}
			wg.Go(func() { bases[i], errs[i] = ApplyBatch(ctx, store, p, mine, bases[i]) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, err
		}
		return batch[len(batch)-1].Event.GetSequence(), nil
	}
	check := func(ctx context.Context, _ uint64) error {
		for i, p := range ps {
			if current, err := store.Checkpoint(ctx, p.Name()); err == nil && current < bases[i] {
				return fmt.Errorf("%w: %s at %d, projector at %d", ErrStoreBehind, p.Name(), current, bases[i])
			}
		}
		return nil
	}
	return loopFrom(ctx, log, strings.Join(names, "+"), filters, logger, opts, start, check, handle)
}

// matchesAny reports whether subject matches one of the NATS subject
// filters ("*" one token, ">" the rest).
func matchesAny(filters []string, subject string) bool {
	return slices.ContainsFunc(filters, func(f string) bool { return subsumes(f, subject) })
}

// Reactor writes the consequences of other facts: a service that must act
// when another's fact appears (a permission request becomes an action, an
// answered action resolves a permission, a finished task unblocks its
// dependents). Its checkpoint lives in the store like a projection's.
type Reactor interface {
	// Name keys the reactor's checkpoint.
	Name() string
	// Filters are the log subjects it reads; nil reads the whole log.
	Filters() []string
	// Wants says whether React must see the event; others are skipped
	// without a checkpoint write.
	Wants(ev *eventsv1.RuntimeEvent) bool
	// React acts on one event. It must be idempotent: after a crash
	// between React and the checkpoint, or with several replicas, it sees
	// the same event again (decide on state, use derived event ids).
	React(ctx context.Context, rec *eventlog.Record) error
}

// React runs a reactor until ctx ends, resuming from its checkpoint after
// any failure with backoff, like Run. It reacts event by event and writes
// its checkpoint once per batch.
//
// On a partitioned log a reactor reads through a consumer of its own, not
// the process feed: a reaction may wait for read models of other
// partitions (caught up with every partition before it lists across
// sessions), and a feed moves at the pace of its slowest consumer. Two
// reactors of two partitions each waiting for the read model the other's
// feed holds back would wait for each other until their reads time out.
func React(ctx context.Context, log *eventlog.Log, store projection.Store, r Reactor, logger *slog.Logger, opts ...Option) error {
	if log.Partitions() > 1 {
		opts = append(slices.Clone(opts), WithFeed(nil))
	}
	return perPartition(ctx, log, r.Name(), func(ctx context.Context, log *eventlog.Log, name string) error {
		return react(ctx, log, store, namedReactor{r, name}, logger, opts)
	})
}

func react(ctx context.Context, log *eventlog.Log, store projection.Store, r Reactor, logger *slog.Logger, opts []Option) error {
	return loop(ctx, log, store, r.Name(), r.Filters(), logger, opts, func(ctx context.Context, batch []*eventlog.Record, base uint64) (uint64, error) {
		reacted := base
		var failed error
		for _, rec := range batch {
			if rec.Event.GetSequence() <= base || !r.Wants(rec.Event) {
				continue
			}
			if err := r.React(ctx, rec); err != nil {
				failed = fmt.Errorf("react %s at %d (%s): %w", r.Name(), rec.Event.GetSequence(), rec.Event.GetType(), err)
				break
			}
			reacted = rec.Event.GetSequence()
		}
		if reacted > base {
			if _, err := store.Apply(ctx, projection.Batch{Projection: r.Name(), Sequence: reacted}); err != nil {
				return base, errors.Join(failed, err)
			}
		}
		if failed != nil {
			return reacted, failed
		}
		// Unwanted events are not worth a write; after a restart they are
		// read and skipped again. The base stays what the store holds.
		return reacted, nil
	})
}

type handler func(ctx context.Context, batch []*eventlog.Record, base uint64) (uint64, error)

// loop follows the log from a checkpoint with handle until ctx ends,
// starting over from the checkpoint, with backoff, after any failure.
func loop(ctx context.Context, log *eventlog.Log, store projection.Store, name string, filters []string, logger *slog.Logger, opts []Option, handle handler) error {
	start := func(ctx context.Context) (uint64, error) { return store.Checkpoint(ctx, name) }
	check := func(ctx context.Context, base uint64) error {
		if current, err := store.Checkpoint(ctx, name); err == nil && current < base {
			return fmt.Errorf("%w: %s at %d, projector at %d", ErrStoreBehind, name, current, base)
		}
		return nil
	}
	return loopFrom(ctx, log, name, filters, logger, opts, start, check, handle)
}

// loopFrom is loop with the starting checkpoint read by start.
// check reports a store that went behind what was applied (it lost data).
func loopFrom(ctx context.Context, log *eventlog.Log, name string, filters []string, logger *slog.Logger, opts []Option, start func(context.Context) (uint64, error), check func(context.Context, uint64) error, handle handler) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	o := options{maxBatch: DefaultMaxBatch}
	inherited, _ := ctx.Value(optionsKey{}).([]Option)
	for _, opt := range append(slices.Clip(inherited), opts...) {
		opt(&o)
	}
	backoff := 50 * time.Millisecond
	for {
		err := follow(ctx, log, name, filters, logger, o, start, check, handle)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logger.ErrorContext(ctx, "stopped; resuming from the checkpoint", "consumer", name, "error", err, "retry_in", backoff)
		if o.failure != nil {
			o.failure(name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// catchUpLog is the lag from which a projector says it is catching up, and
// how often it then reports its progress.
const (
	// storeCheckEvery is how often an idle projector checks that its
	// store still holds its checkpoint.
	storeCheckEvery = time.Second
	catchUpLog      = 10_000
	progressEvery   = 5 * time.Second
)

func follow(ctx context.Context, log *eventlog.Log, name string, filters []string, logger *slog.Logger, o options, start func(context.Context) (uint64, error), check func(context.Context, uint64) error, handle handler) error {
	checkpoint, err := start(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	// The process's feed when it has one over this log; else one of our
	// own, which reads only our subjects.
	feed := o.feed.of(log)
	if feed == nil {
		feed = newFeed(log, o.maxBatch)
	}
	m := feed.join(filters, checkpoint+1)
	defer feed.leave(m)

	base := checkpoint
	// A store that lost its data (FLUSHALL, failover to an empty or older
	// replica) shows a checkpoint below this projector's: look now and then
	// even when no event comes, so an idle projector notices and rebuilds
	// (reads meanwhile wait for it and answer Unavailable, not NotFound).
	storeCheck := time.NewTicker(storeCheckEvery)
	defer storeCheck.Stop()
	progress := Progress{Name: name, Checkpoint: checkpoint}
	var catchingUp bool
	var started, lastLog time.Time
	var startEvents uint64
	batch := make([]*eventlog.Record, 0, o.maxBatch)
	// carry is the rest of a chunk that did not fit in the last batch.
	var carry []*eventlog.Record
	for {
		batch = batch[:0]
		var stop error
		// at is the last record taken from the feed (ours or not): the
		// lag is counted from it.
		var at *eventlog.Record
		take := func(recs []*eventlog.Record) {
			for i, rec := range recs {
				if filters != nil && !matchesAny(filters, rec.Subject) {
					at = rec
					continue
				}
				if len(batch) == o.maxBatch {
					carry = recs[i:]
					return
				}
				batch, at = append(batch, rec), rec
			}
			carry = nil
		}
		if carry != nil {
			take(carry)
		} else {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-storeCheck.C:
				if err := check(ctx, base); err != nil {
					return err
				}
				continue
			case c := <-m.ch:
				if c.err != nil {
					return c.err
				}
				take(c.recs)
			}
		}
	drain:
		for carry == nil && len(batch) < o.maxBatch {
			select {
			case c := <-m.ch:
				if c.err != nil {
					// The feed ended on a failure: this batch first.
					stop = c.err
					break drain
				}
				take(c.recs)
			default:
				break drain
			}
		}
		if len(batch) > 0 {
			hctx, span := o.batchSpan(ctx, log, name, batch)
			next, err := handle(hctx, batch, base)
			if err != nil {
				span.SetStatus(otelcodes.Error, err.Error())
				span.End()
				return err
			}
			span.End()
			base = next
			if o.afterBatch != nil {
				o.afterBatch(batch, base)
			}
		}
		progress.Checkpoint, progress.Pending = base, lag(at, base)
		progress.Events += uint64(len(batch))
		if o.progress != nil {
			o.progress(progress)
		}
		now := time.Now()
		switch {
		case !catchingUp && progress.Pending >= catchUpLog:
			catchingUp, started, lastLog, startEvents = true, now, now, progress.Events
			logger.InfoContext(ctx, "catching up", "consumer", name, "checkpoint", base, "pending", progress.Pending)
		case catchingUp && progress.Pending == 0:
			catchingUp = false
			n := progress.Events - startEvents
			logger.InfoContext(ctx, "caught up", "consumer", name, "checkpoint", base, "events", n,
				"seconds", now.Sub(started).Seconds(), "events_per_second", float64(n)/max(now.Sub(started).Seconds(), 1e-9))
		case catchingUp && now.Sub(lastLog) >= progressEvery:
			lastLog = now
			logger.InfoContext(ctx, "catching up", "consumer", name, "checkpoint", base, "pending", progress.Pending,
				"events_per_second", float64(progress.Events-startEvents)/now.Sub(started).Seconds())
		}
		if stop != nil {
			return stop
		}
	}
}

// lag is how many events a consumer at base has yet to read, as the feed
// saw the log when it delivered at (the last record taken). The feed's
// pending count is the lag of a consumer that has applied at; one ahead of
// the feed (it skips what the feed reads again for a consumer behind it)
// lags only by what follows its own checkpoint, at most nothing.
func lag(at *eventlog.Record, base uint64) uint64 {
	if at == nil {
		return 0
	}
	end := at.Event.GetSequence() + at.Pending
	if end <= base {
		return 0
	}
	return min(at.Pending, end-base)
}

// maxSpanLinks bounds the links a batch span carries to its events'
// producers.
const maxSpanLinks = 128

// batchSpan starts the span of one batch: a child of its first event's
// producer, linked to the other events' producers.
func (o options) batchSpan(ctx context.Context, log *eventlog.Log, name string, batch []*eventlog.Record) (context.Context, trace.Span) {
	if o.tracer == nil {
		return ctx, tracenoop.Span{}
	}
	var links []trace.Link
	for _, rec := range batch[1:min(len(batch), maxSpanLinks+1)] {
		if l := trace.LinkFromContext(log.TraceContext(context.Background(), rec)); l.SpanContext.IsValid() {
			links = append(links, l)
		}
	}
	first, last := batch[0].Event, batch[len(batch)-1].Event
	return o.tracer.Start(log.TraceContext(ctx, batch[0]), "agentruntime.consume "+name,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("agentruntime.consumer", name),
			attribute.Int("messaging.batch.message_count", len(batch)),
			attribute.Int64("agentruntime.first_sequence", int64(first.GetSequence())),
			attribute.Int64("agentruntime.last_sequence", int64(last.GetSequence())),
			attribute.String("agentruntime.event_type", first.GetType()),
		))
}

// ApplyBatch folds batch (records in log order) over the store from base,
// the checkpoint the projector believes the store holds, and writes the
// result with the last record's sequence as the checkpoint, on condition
// that the store is still at base. If another writer (a replica) moved the
// checkpoint, only the records after it are folded again, on its state.
// It returns the checkpoint the store holds for the projection afterwards.
func ApplyBatch(ctx context.Context, store projection.Store, p Projection, batch []*eventlog.Record, base uint64) (uint64, error) {
	for {
		ov := projection.NewOverlay(store)
		var last uint64
		for _, rec := range batch {
			seq := rec.Event.GetSequence()
			if seq <= base {
				continue
			}
			b, err := p.Project(ctx, ov, rec)
			if err != nil {
				return base, fmt.Errorf("project %s at %d (%s): %w", p.Name(), seq, rec.Event.GetType(), err)
			}
			if _, err := ov.Apply(ctx, b); err != nil {
				return base, fmt.Errorf("project %s at %d (%s): %w", p.Name(), seq, rec.Event.GetType(), err)
			}
			last = seq
		}
		if last == 0 {
			return base, nil
		}
		merged := ov.Batch(p.Name(), last)
		merged.Conditional, merged.Base = true, base
		applied, err := store.Apply(ctx, merged)
		if err != nil {
			return base, fmt.Errorf("apply %s at %d: %w", p.Name(), last, err)
		}
		if applied {
			return last, nil
		}
		current, err := store.Checkpoint(ctx, p.Name())
		if err != nil {
			return base, fmt.Errorf("checkpoint %s: %w", p.Name(), err)
		}
		if current <= base {
			// The store went back (flushed, restored): start over from it.
			return base, fmt.Errorf("%w: %s at %d, projector at %d", ErrStoreBehind, p.Name(), current, base)
		}
		base = current
	}
}

// ErrStoreBehind: the store's checkpoint is behind what the projector
// applied: it lost data. The projector starts over from the store.
var ErrStoreBehind = errors.New("projector: store went back")

// ApplyOne applies one record: Project, then Apply with the record's
// sequence as the checkpoint. Exported for tests and for rebuild tools.
func ApplyOne(ctx context.Context, store projection.Store, p Projection, rec *eventlog.Record) error {
	batch, err := p.Project(ctx, store, rec)
	if err != nil {
		return fmt.Errorf("project %s at %d (%s): %w", p.Name(), rec.Event.GetSequence(), rec.Event.GetType(), err)
	}
	batch.Projection = p.Name()
	batch.Sequence = rec.Event.GetSequence()
	if _, err := store.Apply(ctx, batch); err != nil {
		return fmt.Errorf("apply %s at %d: %w", p.Name(), batch.Sequence, err)
	}
	return nil
}

// ErrBehind is returned by WaitFor when the projection did not reach the
// requested sequence in time. Callers see Unavailable (retry shortly).
var ErrBehind = fault.Sentinel("projector: read model has not caught up",
	fault.Unavailable("the read model is catching up; retry the request", 500*time.Millisecond))

// WaitFor waits, at most timeout, until the projection has applied seq:
// read-your-writes for a read that carries min_sequence. It returns the
// checkpoint reached; on timeout ErrBehind with it. On a partitioned log
// seq is a position and the wait is for its partition's checkpoint; with
// seq 0 there it waits for nothing and answers 0 (no one checkpoint says
// how far a read model is).
func WaitFor(ctx context.Context, log *eventlog.Log, store projection.Store, projectionName string, seq uint64, timeout time.Duration) (uint64, error) {
	if p := log.Partitions(); p > 1 {
		if seq == 0 {
			return 0, nil
		}
		projectionName = CheckpointName(projectionName, p, log.PartitionOfPosition(seq))
	}
	if seq == 0 {
		return store.Checkpoint(ctx, projectionName)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got, err := store.WaitFor(wctx, projectionName, seq)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return got, fmt.Errorf("%w: at %d, want %d", ErrBehind, got, seq)
	}
	return got, err
}

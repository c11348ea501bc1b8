// Package projector owns the loop that turns the event log into read models:
// it follows the log from a projection's checkpoint and applies each event's
// changes to a projection.Store together with the new checkpoint.
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
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
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

// Run applies the projection until ctx ends. A failure to apply (store or
// log unavailable) is retried from the checkpoint with backoff; an error
// from Project is a bug in the projection: the event is retried likewise,
// so the read model stops rather than skip a fact, and the error is logged.
func Run(ctx context.Context, log *eventlog.Log, store projection.Store, p Projection, logger *slog.Logger) error {
	return loop(ctx, log, store, p.Name(), p.Filters(), logger, func(ctx context.Context, rec *eventlog.Record) error {
		return ApplyOne(ctx, store, p, rec)
	})
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
// any failure with backoff, like Run.
func React(ctx context.Context, log *eventlog.Log, store projection.Store, r Reactor, logger *slog.Logger) error {
	return loop(ctx, log, store, r.Name(), r.Filters(), logger, func(ctx context.Context, rec *eventlog.Record) error {
		if !r.Wants(rec.Event) {
			return nil
		}
		if err := r.React(ctx, rec); err != nil {
			return fmt.Errorf("react %s at %d (%s): %w", r.Name(), rec.Event.GetSequence(), rec.Event.GetType(), err)
		}
		_, err := store.Apply(ctx, projection.Batch{Projection: r.Name(), Sequence: rec.Event.GetSequence()})
		return err
	})
}

// loop follows the log from a checkpoint with handle until ctx ends,
// starting over from the checkpoint, with backoff, after any failure.
func loop(ctx context.Context, log *eventlog.Log, store projection.Store, name string, filters []string, logger *slog.Logger, handle func(context.Context, *eventlog.Record) error) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	backoff := 50 * time.Millisecond
	for {
		err := follow(ctx, log, store, name, filters, handle)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logger.ErrorContext(ctx, "stopped; resuming from the checkpoint", "consumer", name, "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func follow(ctx context.Context, log *eventlog.Log, store projection.Store, name string, filters []string, handle func(context.Context, *eventlog.Record) error) error {
	checkpoint, err := store.Checkpoint(ctx, name)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	sub, err := log.Subscribe(ctx, filters, eventlog.FromSequence(checkpoint+1))
	if err != nil {
		return err
	}
	defer sub.Stop()
	for {
		rec, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		if err := handle(ctx, rec); err != nil {
			return err
		}
	}
}

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
// requested sequence in time.
var ErrBehind = errors.New("projector: read model has not caught up")

// WaitFor waits, at most timeout, until the projection has applied seq:
// read-your-writes for a read that carries min_sequence. It returns the
// checkpoint reached; on timeout ErrBehind with it.
func WaitFor(ctx context.Context, store projection.Store, projectionName string, seq uint64, timeout time.Duration) (uint64, error) {
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

// Options of the projector and reactor loops, and the progress they report.

package projector

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
)

// Option tunes Run and React.
type Option func(*options)

type options struct {
	maxBatch   int
	progress   func(Progress)
	failure    func(name string, err error)
	afterBatch func(batch []*eventlog.Record, checkpoint uint64)
	tracer     trace.Tracer
	feed       *Feed
}

// WithTracerProvider records a consumer span per batch, a child of the
// span that appended the batch's first event (its NATS headers carry the
// W3C trace context) and linked to the others', so a turn's trace shows
// every read model and reactor its facts went through.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) {
		if tp != nil {
			o.tracer = tp.Tracer("github.com/agentruntime/agentruntime/pkg/projector")
		}
	}
}

type optionsKey struct{}

// ContextWithOptions returns ctx carrying options every Run and React
// under it applies before its own: how the composition root gives every
// consumer of a service the process's tracer and progress observer without
// each service passing them on.
func ContextWithOptions(ctx context.Context, opts ...Option) context.Context {
	inherited, _ := ctx.Value(optionsKey{}).([]Option)
	return context.WithValue(ctx, optionsKey{}, append(slices.Clip(inherited), opts...))
}

// WithMaxBatch bounds the events folded into one store write. Memory held
// by a projector is bounded by it.
//
// The default is DefaultMaxBatch. It was 1 for a while: with multi-event
// batches control's TestOldSessionRecovery lost a turn in about one run in
// five. The cause was not the fold: eventlog.AppendBatch, which the test
// writes its 2,000 events with, skipped a publish that found every
// in-flight slot taken and went on around a hole, more often under the
// load of batched folding (fixed with TestBatchAppendNeverSkipsAStalledPublish;
// the test then passed 15 of 15 under -race at 512, and the whole suite).
func WithMaxBatch(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBatch = n
		}
	}
}

// DefaultMaxBatch is the batch bound when WithMaxBatch is not given.
const DefaultMaxBatch = 512

// WithProgress calls fn after every batch with where the projector stands:
// readiness and lag for health checks and metrics (it must not block).
// Several observers add up: each is called.
func WithProgress(fn func(Progress)) Option {
	return func(o *options) {
		prev := o.progress
		o.progress = func(p Progress) {
			if prev != nil {
				prev(p)
			}
			fn(p)
		}
	}
}

// WithFailure calls fn each time a projector or reactor stops on an error
// and is about to resume from its checkpoint (readiness: one that keeps
// failing is not serving). It must not block. Several observers add up.
func WithFailure(fn func(name string, err error)) Option {
	return func(o *options) {
		prev := o.failure
		o.failure = func(name string, err error) {
			if prev != nil {
				prev(name, err)
			}
			fn(name, err)
		}
	}
}

// WithAfterBatch calls fn after each batch is in the store (written by
// this projector, or found already written by another replica), before the
// next batch is taken, with the batch's records and the checkpoint. A
// process that holds something derived from the read model (a cache)
// invalidates it here: the store then holds at least these events. fn must
// not keep the slice.
func WithAfterBatch(fn func(batch []*eventlog.Record, checkpoint uint64)) Option {
	return func(o *options) { o.afterBatch = fn }
}

// Progress is where a projector or reactor stands.
type Progress struct {
	Name string
	// Checkpoint is the last sequence applied (or skipped past).
	Checkpoint uint64
	// Pending is how many matching events followed the last one read, as
	// the consumer saw them: the lag. 0 means at the head.
	Pending uint64
	// Events is how many events this run has folded since it started.
	Events uint64
}

// CaughtUp reports whether the projector had read everything in the log
// when it last looked.
func (p Progress) CaughtUp() bool { return p.Pending == 0 }

package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
)

// Executor is the write path before Writer: it decides on the read model
// after waiting for it to reach the aggregate's last sequence. Services
// move to Writer one by one (docs/adr/0005-hot-path.md); it goes when the
// last one has.
type Executor struct {
	Log        *eventlog.Log
	Store      projection.Store
	Projection string
	// MaxAttempts bounds conflict retries; default 32.
	MaxAttempts int
	// CatchUp bounds the wait for the read model; default 5s.
	CatchUp time.Duration
}

// Execute runs decide until its events land at the expected sequence.
func (x Executor) Execute(ctx context.Context, agg eventlog.Aggregate, decide func(ctx context.Context, last uint64) ([]*eventsv1.RuntimeEvent, error)) (Result, error) {
	attempts := x.MaxAttempts
	if attempts <= 0 {
		attempts = 32
	}
	catchUp := x.CatchUp
	if catchUp <= 0 {
		catchUp = 5 * time.Second
	}
	for i := 0; i < attempts; i++ {
		last, err := x.Log.LastSequence(ctx, agg)
		if err != nil {
			return Result{}, err
		}
		if _, err := projector.WaitFor(ctx, x.Store, x.Projection, last, catchUp); err != nil {
			return Result{}, err
		}
		evs, err := decide(ctx, last)
		if err != nil {
			return Result{}, err
		}
		if len(evs) == 0 {
			return Result{Sequence: last}, nil
		}
		appended, err := x.Log.AppendAtomic(ctx, agg, eventlog.ExpectSequence(last), evs...)
		if errors.Is(err, eventlog.ErrConflict) && len(appended) == 0 {
			if err := backoff(ctx, i); err != nil {
				return Result{}, err
			}
			continue
		}
		if err != nil {
			return Result{Appended: appended}, err
		}
		return Result{Appended: appended, Sequence: appended[len(appended)-1].Sequence}, nil
	}
	return Result{}, fmt.Errorf("%w after %d attempts on %s", ErrExhausted, attempts, agg)
}

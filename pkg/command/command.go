// Package command owns the write path every command takes (DESIGN §3): find
// where the aggregate stands in the log, wait until the read model has
// applied that far, decide on that state, append with the expected
// sequence, and on a conflict do it all again. No locks: any number of
// replicas may run the same command at once and exactly one wins each round.
package command

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
)

// ErrExhausted: the aggregate kept changing under the command until the
// attempts ran out. Callers map it to gRPC Aborted (retry later).
var ErrExhausted = errors.New("command: the aggregate kept changing; gave up")

// Executor runs commands against one read model.
type Executor struct {
	Log   *eventlog.Log
	Store projection.Store
	// Projection is the read model the decide functions read. Its filters
	// must include the aggregates it decides on.
	Projection string
	// MaxAttempts bounds conflict retries; default 32.
	MaxAttempts int
	// CatchUp bounds the wait for the read model; default 5s.
	CatchUp time.Duration
}

// Decide returns the events a command appends, given that the read model
// holds the aggregate's latest state (at log sequence `last`, 0 when the
// aggregate has no events). No events and no error: nothing to append (an
// idempotent retry, a no-op). An error is the command's answer to the
// caller; nothing is appended.
type Decide func(ctx context.Context, last uint64) ([]*eventsv1.RuntimeEvent, error)

// Result of a command.
type Result struct {
	Appended []eventlog.Appended
	// Sequence is the consistency token: the log sequence of the last event
	// appended, or of the aggregate's last event when nothing was appended.
	Sequence uint64
}

// Execute runs decide until its events land at the expected sequence.
func (x Executor) Execute(ctx context.Context, agg eventlog.Aggregate, decide Decide) (Result, error) {
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
		appended, err := x.Log.Append(ctx, agg, eventlog.ExpectSequence(last), evs...)
		if errors.Is(err, eventlog.ErrConflict) && len(appended) == 0 {
			// Writers that lost the race back off a random moment, growing
			// with each loss, so a hot aggregate does not livelock them.
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

func backoff(ctx context.Context, attempt int) error {
	ceiling := min(time.Millisecond<<min(attempt, 6), 50*time.Millisecond)
	t := time.NewTimer(rand.N(ceiling) + 1)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

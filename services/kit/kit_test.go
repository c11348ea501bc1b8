package kit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentruntime/agentruntime/services/kit"
)

// A loop that fails stops the others at once and its error is returned:
// a failed projector must not show only at shutdown.
func TestRunAllReturnsTheFirstFailureAndCancelsTheRest(t *testing.T) {
	boom := errors.New("boom")
	stopped := make(chan struct{})
	err := kit.RunAll(context.Background(),
		func(ctx context.Context) error { <-ctx.Done(); close(stopped); return ctx.Err() },
		func(context.Context) error { return boom },
	)
	if !errors.Is(err, boom) {
		t.Fatalf("RunAll = %v, want the failing loop's error", err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("RunAll returned before the other loop stopped")
	}
}

// Shutdown is not a failure: loops that end with the context's error make
// RunAll return nil.
func TestRunAllAtShutdownIsNil(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- kit.RunAll(ctx,
			func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
		)
	}()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("RunAll at shutdown = %v, want nil", err)
	}
}

// Package testkit holds the helpers every package's tests share: a context
// bounded by the test, polling for a condition with a deadline, and the
// types of a list of events. Packages under it (natstest, redistest,
// natsserver, natsproxy, binproc) start the real parts tests run against.
package testkit

import (
	"context"
	"sync"
	"testing"
	"time"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Deadline bounds Context and Eventually: long enough for a loaded CI
// machine, short enough that a hang fails the test rather than the run.
const Deadline = 60 * time.Second

// Context is a context cancelled when the test ends or after Deadline.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	t.Cleanup(cancel)
	return ctx
}

// Eventually polls cond every 20ms until it holds, and fails the test with
// what it waited for when Deadline passes first. It is for conditions a
// test cannot be told about (another process's state); where the code
// under test offers a wait (a token, a subscription), use that.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(Deadline)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s", Deadline, what)
		case <-tick.C:
		}
	}
}

// EventuallyWithin is Eventually with its own bound, and a failure that
// says what was seen last (state is called once, when the bound passes):
// for waits on other processes whose state explains a timeout.
func EventuallyWithin(t testing.TB, d time.Duration, state func() string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %s: %s", d, state())
		case <-tick.C:
		}
	}
}

// Types are the events' types, in order (nil for none).
func Types(evs []*eventsv1.RuntimeEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.GetType())
	}
	return out
}

// Parallel runs fn on every item, n at a time, and returns when all are
// done.
func Parallel[T any](n int, items []T, fn func(T)) {
	work := make(chan T)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for it := range work {
				fn(it)
			}
		})
	}
	for _, it := range items {
		work <- it
	}
	close(work)
	wg.Wait()
}

// Within fails the test unless exactly want of the ids in order match,
// each among the first bound (a claim order: the turns of quiet users
// among the first claims).
func Within(t testing.TB, order []string, match func(id string) bool, want, bound int) {
	t.Helper()
	n := 0
	for i, id := range order {
		if !match(id) {
			continue
		}
		n++
		if i >= bound {
			t.Errorf("%s at position %d, want within the first %d", id, i+1, bound)
		}
	}
	if n != want {
		t.Fatalf("%d of %d ids in %d match, want %d", n, want, len(order), want)
	}
}

// Package leasetest is the contract suite every worker lease store must
// pass (lease.Store): run it against the in-process and the Redis one.
package leasetest

import (
	"context"
	"fmt"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Leases is the contract under test.
type Leases = lease.Store

// Harness builds a fresh store. Expire makes every lease taken so far
// with a ttl up to d lapse: the in-process store advances its clock, the
// Redis one waits on Redis's own expiry.
type Harness struct {
	New    func(t *testing.T) Leases
	Expire func(t *testing.T, l Leases, key string, d time.Duration)
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	ctx := context.Background()
	t.Run("one holder at a time", func(t *testing.T) {
		l := h.New(t)
		mustTrue(t)(l.Acquire(ctx, "k", "a", time.Minute))
		mustFalse(t)(l.Acquire(ctx, "k", "b", time.Minute))
		tok, held, err := l.Holder(ctx, "k")
		if err != nil || !held || tok != "a" {
			t.Fatalf("holder %q %v %v", tok, held, err)
		}
	})
	t.Run("renew only by the holder", func(t *testing.T) {
		l := h.New(t)
		mustTrue(t)(l.Acquire(ctx, "k", "a", time.Minute))
		mustTrue(t)(l.Renew(ctx, "k", "a", time.Minute))
		mustFalse(t)(l.Renew(ctx, "k", "b", time.Minute))
		mustFalse(t)(l.Renew(ctx, "other", "a", time.Minute))
	})
	t.Run("release only by the holder", func(t *testing.T) {
		l := h.New(t)
		mustTrue(t)(l.Acquire(ctx, "k", "a", time.Minute))
		if err := l.Release(ctx, "k", "b"); err != nil {
			t.Fatal(err)
		}
		if _, held, _ := l.Holder(ctx, "k"); !held {
			t.Fatal("another token released the lease")
		}
		if err := l.Release(ctx, "k", "a"); err != nil {
			t.Fatal(err)
		}
		if _, held, _ := l.Holder(ctx, "k"); held {
			t.Fatal("released lease still held")
		}
		mustTrue(t)(l.Acquire(ctx, "k", "b", time.Minute))
	})
	t.Run("expired lease cannot be renewed and is free", func(t *testing.T) {
		l := h.New(t)
		mustTrue(t)(l.Acquire(ctx, "k", "a", 200*time.Millisecond))
		h.Expire(t, l, "k", 200*time.Millisecond)
		if _, held, _ := l.Holder(ctx, "k"); held {
			t.Fatal("expired lease still held")
		}
		mustFalse(t)(l.Renew(ctx, "k", "a", time.Minute))
		mustTrue(t)(l.Acquire(ctx, "k", "b", time.Minute))
		// The old holder's late release must not free the new holder's.
		if err := l.Release(ctx, "k", "a"); err != nil {
			t.Fatal(err)
		}
		if tok, held, _ := l.Holder(ctx, "k"); !held || tok != "b" {
			t.Fatalf("holder %q %v", tok, held)
		}
	})
	t.Run("renewal extends the lease", func(t *testing.T) {
		l := h.New(t)
		mustTrue(t)(l.Acquire(ctx, "k", "a", 200*time.Millisecond))
		mustTrue(t)(l.Renew(ctx, "k", "a", time.Hour))
		h.Expire(t, l, "k", 200*time.Millisecond)
		if tok, held, _ := l.Holder(ctx, "k"); !held || tok != "a" {
			t.Fatalf("renewed lease lost: %q %v", tok, held)
		}
	})
	t.Run("concurrent acquirers: exactly one wins each key", func(t *testing.T) {
		l := h.New(t)
		const keys, workers = 20, 16
		var wins [keys]atomic.Int32
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < keys; k++ {
					ok, err := l.Acquire(ctx, fmt.Sprint("k", k), fmt.Sprint("w", w), time.Minute)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						wins[k].Add(1)
					}
				}
			}()
		}
		wg.Wait()
		for k := range wins {
			if n := wins[k].Load(); n != 1 {
				t.Errorf("key %d acquired %d times", k, n)
			}
		}
	})
}

func mustTrue(t *testing.T) func(bool, error) {
	return func(ok bool, err error) {
		t.Helper()
		if err != nil || !ok {
			t.Fatalf("want true, got %v %v", ok, err)
		}
	}
}

func mustFalse(t *testing.T) func(bool, error) {
	return func(ok bool, err error) {
		t.Helper()
		if err != nil || ok {
			t.Fatalf("want false, got %v %v", ok, err)
		}
	}
}
